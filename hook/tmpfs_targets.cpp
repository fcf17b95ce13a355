#include "hook/tmpfs_targets.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bundle/mount_place.hpp"
#include "core/text.hpp"

namespace gpufrac::hook {

namespace {

std::unexpected<Error> refuse(std::string_view path, std::string_view why) {
  return internal_error("gpufrac's tmpfs: mount point " + text::quote(path, 256) + ": " + std::string(why));
}

fs::UniqueFd open_beneath(int dir_fd, const std::string& rel, std::uint64_t resolve) {
  struct open_how how {};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | resolve;
  return fs::UniqueFd(static_cast<int>(::syscall(SYS_openat2, dir_fd, rel.c_str(), &how, sizeof how)));
}

// The directory that holds the last component of `parts`, made (0755) where missing.
Result<fs::UniqueFd> make_parents(int tmpfs_fd, const std::vector<std::string>& parts, std::string_view path) {
  fs::UniqueFd cur(::fcntl(tmpfs_fd, F_DUPFD_CLOEXEC, 3));
  if (!cur) return sys_error("cannot duplicate the fd of gpufrac's tmpfs");
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (::mkdirat(cur.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST)
      return sys_error("cannot create a directory in gpufrac's tmpfs for " + text::quote(path, 256));
    fs::UniqueFd next(::openat(cur.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return sys_error("cannot open a directory in gpufrac's tmpfs for " + text::quote(path, 256));
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

std::optional<std::string> path_beneath(std::string_view base, std::string_view path) {
  while (base.size() > 1 && base.back() == '/') base.remove_suffix(1);
  if (path.size() <= base.size() + 1 || !path.starts_with(base) || path[base.size()] != '/') return std::nullopt;
  std::string rel(path.substr(base.size() + 1));
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  if (rel.empty()) return std::nullopt;
  return rel;
}

Result<> make_tmpfs_target(int tmpfs_fd, std::string_view rel, bundle::TargetKind kind,
                           std::string_view container_path) {
  auto parts = bundle::split_container_path("/" + std::string(rel));
  if (!parts) return std::unexpected(parts.error());
  auto dir = make_parents(tmpfs_fd, *parts, container_path);
  if (!dir) return std::unexpected(dir.error());
  const char* name = parts->back().c_str();
  if (kind == bundle::TargetKind::directory) {
    if (::mkdirat(dir->get(), name, 0755) != 0) return sys_error("cannot create " + text::quote(container_path, 256));
    return {};
  }
  fs::UniqueFd fd(::openat(dir->get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return sys_error("cannot create " + text::quote(container_path, 256) + " in gpufrac's tmpfs");
  return {};
}

Result<fs::UniqueFd> open_tmpfs_target(int tmpfs_fd, std::string_view rel, bundle::TargetKind kind,
                                       std::string_view container_path) {
  fs::UniqueFd fd = open_beneath(tmpfs_fd, std::string(rel), RESOLVE_NO_XDEV);
  if (!fd) return sys_error("cannot open " + text::quote(container_path, 256) + " in gpufrac's tmpfs");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat " + text::quote(container_path, 256));
  if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode) != (kind == bundle::TargetKind::directory))
    return refuse(container_path, "is not the kind of file gpufrac made there");
  return fd;
}

bool is_spec_tmpfs(int dir_fd, std::string_view shim_rel, int shim_fd) {
  auto dir = bundle::mount_place(dir_fd, "gpufrac's tmpfs");
  fs::UniqueFd shim = open_beneath(dir_fd, std::string(shim_rel), 0);
  if (!dir || !dir->mount_root || !shim) return false;
  auto seen = bundle::mount_place(shim.get(), "the shim in gpufrac's tmpfs");
  auto want = bundle::mount_place(shim_fd, "the shim");
  return seen && want && seen->mount_root && seen->mount_id != dir->mount_id && seen->dev == want->dev &&
         seen->ino == want->ino;
}

bool is_tmpfs(int dir_fd) {
  struct statfs fs {};
  auto place = bundle::mount_place(dir_fd, "/dev/shm");
  return ::fstatfs(dir_fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC && place && place->mount_root;
}

}  // namespace gpufrac::hook
