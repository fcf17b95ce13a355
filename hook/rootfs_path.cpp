#include "hook/rootfs_path.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <optional>

#include "core/text.hpp"

namespace gpufrac::hook {

namespace {

constexpr std::size_t kMaxPath = 4096;
constexpr std::size_t kMaxComponent = 255;

std::unexpected<Error> refuse(std::string_view path, std::string_view why) {
  return user_error("container path " + text::quote(path, 256) + ": " + std::string(why));
}

// Opens one component of a walk. ELOOP/symlink and non-directories are reported in path terms.
Result<fs::UniqueFd> open_component(int dir_fd, const std::string& name, std::string_view path, bool want_dir) {
  fs::UniqueFd fd(::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::unexpected(Error{"missing", ENOENT, ErrorKind::user});
    return sys_error("container path " + text::quote(path, 256));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat container path " + text::quote(path, 256));
  if (S_ISLNK(st.st_mode)) return refuse(path, "a component is a symlink; refusing to follow it");
  if (want_dir && !S_ISDIR(st.st_mode)) return refuse(path, "a component is not a directory");
  return fd;
}

Result<fs::UniqueFd> open_or_make_dir(int dir_fd, const std::string& name, std::string_view path, bool create) {
  auto fd = open_component(dir_fd, name, path, true);
  if (fd || fd.error().err != ENOENT || !create) return fd;
  if (::mkdirat(dir_fd, name.c_str(), 0755) != 0 && errno != EEXIST)
    return sys_error("cannot create directory in container path " + text::quote(path, 256));
  return open_component(dir_fd, name, path, true);
}

Result<fs::UniqueFd> walk_parents(int root_fd, const std::vector<std::string>& parts, std::string_view path,
                                  bool create) {
  fs::UniqueFd cur(::fcntl(root_fd, F_DUPFD_CLOEXEC, 3));
  if (!cur) return sys_error("cannot duplicate the container root fd");
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    auto next = open_or_make_dir(cur.get(), parts[i], path, create);
    if (!next) return next;
    cur = std::move(*next);
  }
  return cur;
}

Result<fs::UniqueFd> make_file(int dir_fd, const std::string& name, std::string_view path) {
  fs::UniqueFd created(::openat(dir_fd, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!created && errno != EEXIST) return sys_error("cannot create container path " + text::quote(path, 256));
  return open_component(dir_fd, name, path, false);
}

// The walk's rules in one syscall where the kernel has openat2 (5.6+): beneath the root, no symlink
// in any component (a trailing one is opened as itself and refused below), no magic link. Returns
// the target only when it exists as the wanted kind; anything else (ENOSYS, a missing component,
// a symlink, a wrong kind) goes to the walk, which creates what is missing and words the error.
fs::UniqueFd resolve_existing(int root_fd, const std::vector<std::string>& parts, std::optional<TargetKind> kind) {
  std::string rel;
  for (const auto& p : parts) rel += (rel.empty() ? "" : "/") + p;
  struct open_how how {};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  fs::UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how)));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || S_ISLNK(st.st_mode)) return {};
  if (kind && S_ISDIR(st.st_mode) != (*kind == TargetKind::directory)) return {};
  return fd;
}

}  // namespace

Result<std::vector<std::string>> split_container_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return refuse(path, "must be an absolute path");
  if (path.size() > kMaxPath) return refuse(path, "is too long");
  if (path.find('\0') != std::string_view::npos) return refuse(path, "contains NUL");
  std::vector<std::string> parts;
  for (auto& part : text::split(path.substr(1), '/')) {
    if (part.empty()) continue;
    if (part == "..") return refuse(path, "contains \"..\"");
    if (part == ".") continue;
    if (part.size() > kMaxComponent) return refuse(path, "has a component longer than 255 bytes");
    parts.push_back(std::move(part));
  }
  if (parts.empty()) return refuse(path, "names the container root itself");
  return parts;
}

Result<fs::UniqueFd> open_in_root(int root_fd, std::string_view path) {
  auto parts = split_container_path(path);
  if (!parts) return std::unexpected(parts.error());
  if (auto fd = resolve_existing(root_fd, *parts, std::nullopt)) return fd;
  auto parent = walk_parents(root_fd, *parts, path, false);
  auto fd = parent ? open_component(parent->get(), parts->back(), path, false) : std::move(parent);
  if (!fd && fd.error().err == ENOENT) return refuse(path, "does not exist");
  return fd;
}

Result<std::string> read_regular_in_root(int root_fd, std::string_view path, std::size_t max_bytes) {
  auto fd = open_in_root(root_fd, path);
  if (!fd)
    return fd.error().message.ends_with("does not exist") ? Result<std::string>("") : std::unexpected(fd.error());
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return sys_error("cannot stat container path " + text::quote(path, 256));
  if (!S_ISREG(st.st_mode)) return refuse(path, "is not a regular file");
  const std::string reopen = text::cat("/proc/self/fd/", fd->get());
  fs::UniqueFd readable(::open(reopen.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!readable) return sys_error("cannot read container path " + text::quote(path, 256));
  return fs::read_fd(readable.get(), max_bytes, "container path " + std::string(path));
}

Result<std::string> read_image_preload(const std::string& rootfs) {
  fs::UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return "";
  return read_regular_in_root(root.get(), "/etc/ld.so.preload", 64u << 10);
}

Result<fs::UniqueFd> ensure_target_in_root(int root_fd, std::string_view path, TargetKind kind) {
  auto parts = split_container_path(path);
  if (!parts) return std::unexpected(parts.error());
  if (auto fd = resolve_existing(root_fd, *parts, kind)) return fd;
  auto parent = walk_parents(root_fd, *parts, path, true);
  if (!parent) return parent;
  if (kind == TargetKind::directory) return open_or_make_dir(parent->get(), parts->back(), path, true);
  auto fd = open_component(parent->get(), parts->back(), path, false);
  if (!fd && fd.error().err == ENOENT) fd = make_file(parent->get(), parts->back(), path);
  if (!fd) return fd;
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return sys_error("cannot stat container path " + text::quote(path, 256));
  if (S_ISDIR(st.st_mode)) return refuse(path, "is a directory, expected a file");
  return fd;
}

}  // namespace gpufrac::hook
