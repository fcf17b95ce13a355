// File-system helpers with errors as values: bounded reads, atomic replace (temp + fsync + rename),
// and an owning file descriptor.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::fs {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// "a FIFO", "a directory", "a character device"... for the file type in an st_mode.
const char* file_kind(mode_t mode);
// Reads a whole file, refusing files larger than max_bytes (untrusted input stays bounded).
Result<std::string> read_file(const std::string& path, std::size_t max_bytes = 16u << 20);
Result<std::string> read_fd(int fd, std::size_t max_bytes, const std::string& what);
// Writes all of data to fd, retrying on EINTR and short writes.
Result<> write_all(int fd, std::string_view data, const std::string& what);
// Points inside write_file_atomic where a probe is called (fault-injection tests crash there).
enum class AtomicWriteStage { temp_written, before_rename };
using AtomicWriteProbe = void (*)(AtomicWriteStage);
// What a write must survive: the machine's crash (fsync of the file and the directory), or only the
// writer's (the page cache outlives a killed process: for state that a reboot makes moot anyway).
enum class Durability { machine, process };
// Atomically replaces path with content: temp file in the same directory, fsync, chmod, rename,
// fsync of the directory. A crash at any instant leaves the old or the new file, never a mix.
// The temp file is "<dir>/.<name>.tmp.<pid>.<n>"; probe (optional) is called at each stage.
Result<> write_file_atomic(const std::string& path, std::string_view content, mode_t mode = 0644,
                           AtomicWriteProbe probe = nullptr, Durability durability = Durability::machine);
// As write_file_atomic, for a file of `size` bytes that is `head` followed by zeros, every byte of
// it allocated before the rename (posix_fallocate): a file others will map MAP_SHARED must have no
// hole (core/shared_map.hpp). A filesystem without room fails here, with ENOSPC, not later.
Result<> write_file_atomic_allocated(const std::string& path, std::string_view head, std::size_t size,
                                     mode_t mode = 0644, Durability durability = Durability::machine);
// Whether errno says the filesystem has no room: ENOSPC (no block or no inode) or EDQUOT.
bool no_space(int err);
// An error of a write under the state directory, with what to do when the directory ran out of
// space: "<message> (the state directory <dir> is full); free space in it or make it larger".
Error state_dir_full(Error e, const std::string& state_dir);
// mkdir -p with the given mode for created components.
Result<> make_dirs(const std::string& path, mode_t mode = 0755);
bool exists(const std::string& path);
// Joins a root prefix and an absolute path: join_root("/tmp/r", "/dev/nvidia0") -> "/tmp/r/dev/nvidia0";
// join_root("/", "/dev") -> "/dev".
std::string join_root(std::string_view root, std::string_view absolute);
std::string dirname(std::string_view path);
std::string basename(std::string_view path);

}  // namespace gpufrac::fs
