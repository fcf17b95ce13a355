#include "bundle/rootfs_path.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <optional>

#include "bundle/mount_place.hpp"
#include "core/text.hpp"

namespace gpufrac::bundle {

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

std::string prefix(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += "/" + parts[i];
  return out;
}

// The mount rule: below the top-level directory, every directory (and a directory target) is on
// that directory's mount. Returns the mount of `fd` for the first component.
Result<std::uint64_t> check_mount(int fd, std::optional<std::uint64_t> anchor, const std::vector<std::string>& parts,
                                  std::size_t index, std::string_view path) {
  auto place = mount_place(fd, "container path " + text::quote(path, 256));
  if (!place) return std::unexpected(place.error());
  if (!anchor || place->mount_id == *anchor) return place->mount_id;
  const std::string what = index + 1 == parts.size() ? "" : text::quote(prefix(parts, index + 1), 256) + " ";
  return refuse(path, text::cat(what, "is on another mount than ", text::quote(prefix(parts, 1), 256),
                                "; gpufrac creates and mounts only on the mount of the path's top-level directory "
                                "(the container root's, or the runtime's there, like /dev)"));
}

// The directory that holds the last component, and the mount of the first (none for a top-level
// target). Walk::place creates what is missing and keeps to the mount rule; Walk::read does neither.
enum class Walk { read, place };
struct Parent {
  fs::UniqueFd fd;
  std::optional<std::uint64_t> anchor;
};

Result<Parent> walk_parents(int root_fd, const std::vector<std::string>& parts, std::string_view path, Walk walk) {
  Parent p{fs::UniqueFd(::fcntl(root_fd, F_DUPFD_CLOEXEC, 3)), std::nullopt};
  if (!p.fd) return sys_error("cannot duplicate the container root fd");
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    auto next = open_or_make_dir(p.fd.get(), parts[i], path, walk == Walk::place);
    if (!next) return std::unexpected(next.error());
    if (walk == Walk::place) {
      auto mount = check_mount(next->get(), p.anchor, parts, i, path);
      if (!mount) return std::unexpected(mount.error());
      p.anchor = *mount;
    }
    p.fd = std::move(*next);
  }
  return p;
}

Result<fs::UniqueFd> make_file(int dir_fd, const std::string& name, std::string_view path) {
  fs::UniqueFd created(::openat(dir_fd, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!created && errno != EEXIST) return sys_error("cannot create container path " + text::quote(path, 256));
  return open_component(dir_fd, name, path, false);
}

fs::UniqueFd openat2_path(int dir_fd, const std::string& rel, int flags, std::uint64_t resolve) {
  struct open_how how {};
  how.flags = static_cast<std::uint64_t>(flags | O_NOFOLLOW | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | resolve;
  return fs::UniqueFd(static_cast<int>(::syscall(SYS_openat2, dir_fd, rel.c_str(), &how, sizeof how)));
}

// The walk's rules in the kernel's one call (openat2, Linux 5.6): beneath the root, no symlink in any
// component (a trailing one is opened as itself and refused below), no magic link; for Walk::place
// the first component from the root, the rest on its mount (RESOLVE_NO_XDEV). Returns the target only
// when it exists as the wanted kind; anything else goes to the walk, which creates what is missing
// and words the error.
fs::UniqueFd resolve_existing(int root_fd, const std::vector<std::string>& parts, std::optional<TargetKind> kind,
                              Walk walk) {
  std::string rest;
  for (std::size_t i = walk == Walk::place ? 1 : 0; i < parts.size(); ++i) rest += (rest.empty() ? "" : "/") + parts[i];
  fs::UniqueFd top, fd;
  if (walk == Walk::read || parts.size() == 1) {
    fd = openat2_path(root_fd, walk == Walk::read ? rest : parts[0], O_PATH, 0);
  } else if ((top = openat2_path(root_fd, parts[0], O_PATH | O_DIRECTORY, 0))) {
    fd = openat2_path(top.get(), rest, O_PATH, RESOLVE_NO_XDEV);
  }
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || S_ISLNK(st.st_mode)) return {};
  if (kind && S_ISDIR(st.st_mode) != (*kind == TargetKind::directory)) return {};
  return fd;
}

// The last component of a directory target: on the mount of the first component, or a mount root
// `accept` takes (the directory of a top-level target is the root itself: any mount).
Result<fs::UniqueFd> place_directory(Parent& parent, const std::vector<std::string>& parts, std::string_view path,
                                     const MountRootCheck& accept) {
  auto fd = open_or_make_dir(parent.fd.get(), parts.back(), path, true);
  if (!fd || !parent.anchor) return fd;
  auto mount = check_mount(fd->get(), parent.anchor, parts, parts.size() - 1, path);
  if (mount) return fd;
  if (accept && accept(fd->get())) return fd;
  return std::unexpected(mount.error());
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
  if (auto fd = resolve_existing(root_fd, *parts, std::nullopt, Walk::read)) return fd;
  auto parent = walk_parents(root_fd, *parts, path, Walk::read);
  auto fd = parent ? open_component(parent->fd.get(), parts->back(), path, false)
                   : Result<fs::UniqueFd>(std::unexpected(parent.error()));
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

Result<fs::UniqueFd> ensure_target_in_root(int root_fd, std::string_view path, TargetKind kind,
                                           const MountRootCheck& accept) {
  auto parts = split_container_path(path);
  if (!parts) return std::unexpected(parts.error());
  if (auto fd = resolve_existing(root_fd, *parts, kind, Walk::place)) return fd;
  auto parent = walk_parents(root_fd, *parts, path, Walk::place);
  if (!parent) return std::unexpected(parent.error());
  if (kind == TargetKind::directory) return place_directory(*parent, *parts, path, accept);
  auto fd = open_component(parent->fd.get(), parts->back(), path, false);
  if (!fd && fd.error().err == ENOENT) fd = make_file(parent->fd.get(), parts->back(), path);
  if (!fd) return fd;
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return sys_error("cannot stat container path " + text::quote(path, 256));
  if (S_ISDIR(st.st_mode)) return refuse(path, "is a directory, expected a file");
  return fd;
}

}  // namespace gpufrac::bundle
