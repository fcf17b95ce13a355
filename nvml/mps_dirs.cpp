#include "nvml/mps_dirs.hpp"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "core/fs.hpp"
#include "core/plan/plan_mps.hpp"
#include "core/text.hpp"

#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256  // Linux 5.10: symlinks on the mount are not followed
#endif

namespace gpufrac {

namespace {

constexpr unsigned long kFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOSYMFOLLOW;
constexpr int kMaxStacked = 16;
constexpr std::uint64_t kShmBytes = 1ull << 30;  // mounts detached from one path at most (each start mounts one)

// Detaches every mount on `path` (none is fine).
Result<> detach(const std::string& path) {
  for (int i = 0; i < kMaxStacked; ++i) {
    if (::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) continue;
    if (errno == EINVAL || errno == ENOENT) return {};
    return sys_error("cannot unmount " + path);
  }
  return internal_error(text::cat(path, ": more than ", kMaxStacked, " mounts stacked; unmount them by hand"));
}

// `path` made anew (the state filesystem's directory under the tmpfs is empty: nothing but the
// tmpfs was ever written there; a directory of an older layout is removed) with a fresh tmpfs on it.
Result<> fresh_tmpfs(const std::string& path, const std::string& options) {
  if (auto r = detach(path); !r) return r;
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return internal_error("cannot remove " + path + ": " + ec.message());
  if (::mkdir(path.c_str(), 0700) != 0) return sys_error("cannot make " + path);
  if (::mount("gpufrac-mps", path.c_str(), "tmpfs", kFlags, options.c_str()) != 0)
    return sys_error(text::cat("cannot mount a tmpfs (", options, ") on ", path));
  return {};
}

}  // namespace

Result<> fresh_mps_dirs(const Config& cfg, const std::string& gpu_uuid) {
  if (auto r = fs::make_dirs(mps_log_dir(cfg, gpu_uuid), 0755); !r) return r;
  if (auto r = fresh_tmpfs(mps_pipe_dir(cfg, gpu_uuid), "size=4m,nr_inodes=4096,mode=0755"); !r) return r;
  return fresh_tmpfs(mps_shm_dir(cfg, gpu_uuid), text::cat("size=", kShmBytes >> 10, "k,nr_inodes=65536,mode=1777"));
}

Result<> unmount_mps_dirs(const Config& cfg, const std::string& gpu_uuid) {
  if (auto r = detach(mps_pipe_dir(cfg, gpu_uuid)); !r) return r;
  return detach(mps_shm_dir(cfg, gpu_uuid));
}

}  // namespace gpufrac
