#include "hook/ns_apply.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "bundle/rootfs_path.hpp"
#include "core/text.hpp"
#include "gpufrac/limits_abi.h"
#include "hook/mount_fd.hpp"
#include "hook/privileges.hpp"
#include "hook/tmpfs_targets.hpp"
#include "nvml/device_nodes.hpp"

namespace gpufrac::hook {

namespace {

bool has_option(const EditMount& m, std::string_view opt) {
  return std::find(m.options.begin(), m.options.end(), opt) != m.options.end();
}

std::string tmpfs_option(const EditMount& m, std::string_view key, std::string fallback) {
  for (const auto& o : m.options)
    if (o.starts_with(std::string(key) + "=")) return o.substr(key.size() + 1);
  return fallback;
}

unsigned octal_mode(const std::string& s, unsigned fallback) {
  if (s.empty() || s.size() > 4) return fallback;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '7') return fallback;
    v = v * 8 + static_cast<unsigned>(c - '0');
  }
  return v;
}

Result<PreparedMount> prepare_mount(const EditMount& m) {
  if (m.type == "tmpfs") {
    auto fd = make_tmpfs(tmpfs_option(m, "size", "1m"), octal_mode(tmpfs_option(m, "mode", "755"), 0755));
    if (!fd) return std::unexpected(fd.error());
    return PreparedMount{std::move(*fd), m.container_path, bundle::TargetKind::directory, true};
  }
  struct stat st {};
  if (::stat(m.host_path.c_str(), &st) != 0) return sys_error("mount source " + m.host_path);
  auto fd = clone_bind_source(m.host_path);
  if (!fd) return std::unexpected(fd.error());
  MountAttrs attrs{.read_only = has_option(m, "ro"),
                   .nosuid = true,
                   .nodev = has_option(m, "nodev"),
                   .noexec = has_option(m, "noexec")};
  if (auto r = set_mount_attrs(fd->get(), attrs, m.container_path); !r) return std::unexpected(r.error());
  return PreparedMount{std::move(*fd), m.container_path,
                       S_ISDIR(st.st_mode) ? bundle::TargetKind::directory : bundle::TargetKind::file};
}

Result<PreparedMount> prepare_device(const EditDeviceNode& d) {
  const std::string& host = d.host_path.empty() ? d.path : d.host_path;
  struct stat st {};
  if (auto r = check_host_device_node(host, d.path); !r) return std::unexpected(r.error());
  if (::stat(host.c_str(), &st) != 0) return sys_error("device node " + host);
  if (!S_ISCHR(st.st_mode) || static_cast<std::int64_t>(major(st.st_rdev)) != d.major ||
      static_cast<std::int64_t>(minor(st.st_rdev)) != d.minor)
    return internal_error(text::cat("device node ", host, " is not the character device ", d.major, ":", d.minor));
  auto fd = clone_bind_source(host);
  if (!fd) return std::unexpected(fd.error());
  if (auto r = set_mount_attrs(fd->get(), {.read_only = true, .nosuid = true, .nodev = false, .noexec = true}, d.path);
      !r)
    return std::unexpected(r.error());
  return PreparedMount{std::move(*fd), d.path, bundle::TargetKind::file};
}

std::size_t depth(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// Each mount nested in an earlier directory mount: in gpufrac's tmpfs, its mount point is made
// there now (through the detached tmpfs's fd); in a directory bind, it is refused.
Result<> nest_in_tmpfs(std::vector<PreparedMount>& mounts) {
  for (std::size_t i = 0; i < mounts.size(); ++i) {
    PreparedMount& m = mounts[i];
    for (std::size_t j = i; j-- > 0;) {
      auto rel = mounts[j].kind == bundle::TargetKind::directory
                     ? path_beneath(mounts[j].container_path, m.container_path)
                     : std::nullopt;
      if (!rel) continue;
      if (!mounts[j].own_tmpfs)
        return internal_error(text::cat("mount target ", text::quote(m.container_path, 256), " lies in the bind at ",
                                        text::quote(mounts[j].container_path, 256),
                                        "; gpufrac makes mount points only in its own tmpfs"));
      if (auto r = make_tmpfs_target(mounts[j].source.get(), *rel, m.kind, m.container_path); !r) return r;
      m.tmpfs = j;
      m.rel = std::move(*rel);
      break;
    }
  }
  return {};
}

// The target of gpufrac's tmpfs may be the tmpfs a CDI spec of gpufrac mounted there (it holds the
// shim): the CDI device's hook mounts its own over it. Nothing else is accepted off the mount rule.
bundle::MountRootCheck accepted_mount_root(const std::vector<PreparedMount>& mounts, std::size_t i) {
  if (!mounts[i].own_tmpfs) return {};
  for (const auto& n : mounts)
    if (n.tmpfs == i && n.container_path == GPUFRAC_CONTAINER_SHIM)
      return [&n](int fd) { return is_spec_tmpfs(fd, n.rel, n.source.get()); };
  return {};
}

Result<fs::UniqueFd> target_of(int root_fd, const std::vector<PreparedMount>& mounts, std::size_t i) {
  const PreparedMount& m = mounts[i];
  if (m.tmpfs) return open_tmpfs_target(mounts[*m.tmpfs].source.get(), m.rel, m.kind, m.container_path);
  return bundle::ensure_target_in_root(root_fd, m.container_path, m.kind, accepted_mount_root(mounts, i));
}

// The container's mounts stop sending propagation (MS_SLAVE, recursively: a shared mount becomes a
// slave that still receives from the host, a private one stays private), so nothing mounted here
// reaches the host or another container through a shared bind or rootfsPropagation: rshared.
Result<> stop_propagation_out(int root_fd, const std::string& rootfs) {
  struct mount_attr attr {};
  attr.propagation = MS_SLAVE;
  // runc and crun bind the root onto itself; elsewhere it is a directory in some mount: the mount
  // that holds it (found going up, at most 256 levels) becomes the slave, with all beneath it.
  fs::UniqueFd up;
  int fd = root_fd;
  for (int level = 0; level < 256; ++level) {
    if (::mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) == 0) return {};
    if (errno != EINVAL) break;
    fs::UniqueFd parent(::openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!parent) break;
    up = std::move(parent);
    fd = up.get();
  }
  return sys_error("cannot make the mounts under the container root " + rootfs + " stop propagating to the host");
}

// Runs in the child, inside the container's mount namespace.
Result<> attach_all(const NamespaceTarget& target, const std::vector<PreparedMount>& mounts) {
  fs::UniqueFd root(::open(target.rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return sys_error("cannot open the container root " + target.rootfs);
  if (auto r = keep_only({CAP_SYS_ADMIN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}); !r) return r;
  if (auto r = stop_propagation_out(root.get(), target.rootfs); !r) return r;
  if (auto r = install_rootfs_seccomp(); !r) return r;
  for (std::size_t i = 0; i < mounts.size(); ++i) {
    auto dst = target_of(root.get(), mounts, i);
    if (!dst) return std::unexpected(dst.error());
    if (auto r = attach_mount(mounts[i].source.get(), dst->get(), mounts[i].container_path); !r) return r;
  }
  return verify_mounts(root.get(), mounts);
}

[[noreturn]] void child_main(int ns_fd, int err_fd, const NamespaceTarget& target,
                             const std::vector<PreparedMount>& mounts) {
  Result<> r = ::setns(ns_fd, CLONE_NEWNS) == 0 ? attach_all(target, mounts)
                                                : Result<>(sys_error("cannot join " + target.mnt_ns_path));
  if (!r) {
    (void)fs::write_all(err_fd, r.error().message, "error pipe");
    ::_exit(r.error().kind == ErrorKind::user ? 1 : 2);
  }
  ::_exit(0);
}

}  // namespace

Result<> verify_mounts(int root_fd, const std::vector<PreparedMount>& mounts) {
  for (const auto& m : mounts) {
    struct stat want {
    }, got{};
    auto fd = bundle::open_in_root(root_fd, m.container_path);
    if (::fstat(m.source.get(), &want) != 0 || !fd || ::fstat(fd->get(), &got) != 0 || want.st_dev != got.st_dev ||
        want.st_ino != got.st_ino)
      return user_error(text::cat("container path ", text::quote(m.container_path, 256),
                                  " does not show what gpufrac mounted there (the root changed during the hook?); "
                                  "the container is not started"));
  }
  return {};
}

Result<std::vector<PreparedMount>> prepare_mounts(const Edits& edits) {
  std::vector<PreparedMount> out;
  std::vector<EditMount> ordered = edits.mounts;
  std::stable_sort(ordered.begin(), ordered.end(), [](const EditMount& a, const EditMount& b) {
    return depth(a.container_path) < depth(b.container_path);
  });
  for (const auto& m : ordered) {
    auto p = prepare_mount(m);
    if (!p) return std::unexpected(p.error());
    out.push_back(std::move(*p));
  }
  for (const auto& d : edits.device_nodes) {
    auto p = prepare_device(d);
    if (!p) return std::unexpected(p.error());
    out.push_back(std::move(*p));
  }
  if (auto r = nest_in_tmpfs(out); !r) return std::unexpected(r.error());
  return out;
}

Result<> attach_in_namespace(const NamespaceTarget& target, const std::vector<PreparedMount>& mounts) {
  fs::UniqueFd ns(::open(target.mnt_ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return sys_error("cannot open " + target.mnt_ns_path);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd rd(pipe_fds[0]), wr(pipe_fds[1]);
  pid_t child = ::fork();
  if (child < 0) return sys_error("cannot fork");
  if (child == 0) child_main(ns.get(), wr.get(), target, mounts);
  wr = fs::UniqueFd();
  auto message = fs::read_fd(rd.get(), 4096, "error pipe");
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  std::string text = message && !message->empty() ? *message : text::cat("mount helper died (status ", status, ")");
  Error e{std::move(text), 0, WIFEXITED(status) && WEXITSTATUS(status) == 1 ? ErrorKind::user : ErrorKind::internal};
  return std::unexpected(std::move(e));
}

}  // namespace gpufrac::hook
