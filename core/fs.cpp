#include "core/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "core/text.hpp"

namespace gpufrac::fs {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::string> read_fd(int fd, std::size_t max_bytes, const std::string& what) {
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error("cannot read " + what);
    }
    if (n == 0) return out;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes)
      return internal_error(text::cat(what, ": larger than ", max_bytes, " bytes"));
    out.append(buf, static_cast<std::size_t>(n));
  }
}

const char* file_kind(mode_t mode) {
  return S_ISREG(mode)    ? "a regular file"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: a FIFO or device planted at a state or config path must not block the open.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return sys_error("cannot open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat " + path);
  if (!S_ISREG(st.st_mode)) {
    Error e{text::cat(path, " is ", file_kind(st.st_mode), ", not a regular file; refusing to read it"), EINVAL,
            ErrorKind::user};
    return std::unexpected(std::move(e));
  }
  return read_fd(fd.get(), max_bytes, path);
}

Result<> write_all(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error("cannot write " + what);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

static std::string temp_name_for(const std::string& path) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return text::cat(dirname(path), "/.", basename(path), ".tmp.", static_cast<long>(::getpid()), ".", rng() % 1000000);
}

static Result<> fsync_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return sys_error("cannot open directory " + dir);
  if (::fsync(fd.get()) != 0) return sys_error("cannot fsync directory " + dir);
  return {};
}

// The temp-file-and-rename sequence of write_file_atomic; fill writes the temp file's content.
template <typename Fill>
static Result<> replace_atomically(const std::string& path, mode_t mode, AtomicWriteProbe probe, Durability durability,
                                   Fill fill) {
  const std::string tmp = temp_name_for(path);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return sys_error("cannot create " + tmp);
  auto fail = [&](Error e) -> Result<> {
    ::unlink(tmp.c_str());
    return std::unexpected(std::move(e));
  };
  if (auto r = fill(fd.get(), tmp); !r) return fail(r.error());
  if (probe) probe(AtomicWriteStage::temp_written);
  if (::fchmod(fd.get(), mode) != 0) return fail(sys_error("cannot chmod " + tmp).error());
  const bool durable = durability == Durability::machine;
  if (durable && ::fsync(fd.get()) != 0) return fail(sys_error("cannot fsync " + tmp).error());
  fd = UniqueFd();
  if (probe) probe(AtomicWriteStage::before_rename);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(sys_error("cannot rename " + tmp + " to " + path).error());
  return durable ? fsync_dir(dirname(path)) : Result<>{};
}

Result<> write_file_atomic(const std::string& path, std::string_view content, mode_t mode, AtomicWriteProbe probe,
                           Durability durability) {
  return replace_atomically(path, mode, probe, durability,
                            [&](int fd, const std::string& tmp) { return write_all(fd, content, tmp); });
}

Result<> write_file_atomic_allocated(const std::string& path, std::string_view head, std::size_t size, mode_t mode,
                                     Durability durability) {
  if (head.size() > size) return internal_error(text::cat(path, ": ", head.size(), " bytes do not fit in ", size));
  return replace_atomically(path, mode, nullptr, durability, [&](int fd, const std::string& tmp) -> Result<> {
    if (auto w = write_all(fd, head, tmp); !w) return w;
    // A private temp file: posix_fallocate's fallback (writing zeros) cannot clobber anyone's data.
    if (int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(size)); rc != 0)
      return sys_error(text::cat("cannot allocate ", size, " bytes for ", tmp), rc);
    return {};
  });
}

bool no_space(int err) {
  return err == ENOSPC || err == EDQUOT;
}

Error state_dir_full(Error e, const std::string& state_dir) {
  if (no_space(e.err))
    e.message += text::cat(" (the state directory ", state_dir, " is full); free space in it or make it larger");
  return e;
}

Result<> make_dirs(const std::string& path, mode_t mode) {
  if (path.empty()) return {};
  std::string partial;
  for (const auto& part : text::split(path, '/')) {
    if (part.empty()) {
      if (partial.empty()) partial = "/";
      continue;
    }
    if (!partial.empty() && partial.back() != '/') partial.push_back('/');
    partial += part;
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) return sys_error("cannot create directory " + partial);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return sys_error("cannot stat " + path);
  if (!S_ISDIR(st.st_mode)) return internal_error(path + ": exists and is not a directory");
  return {};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string join_root(std::string_view root, std::string_view absolute) {
  std::string r(root);
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r == "/" || r.empty()) return std::string(absolute);
  if (!absolute.starts_with('/')) r.push_back('/');
  r.append(absolute);
  return r;
}

std::string dirname(std::string_view path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string_view::npos) return ".";
  if (pos == 0) return "/";
  return std::string(path.substr(0, pos));
}

std::string basename(std::string_view path) {
  auto pos = path.find_last_of('/');
  return std::string(pos == std::string_view::npos ? path : path.substr(pos + 1));
}

}  // namespace gpufrac::fs
