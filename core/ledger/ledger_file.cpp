#include "core/ledger/ledger_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include "core/fault.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

// The pid holding a flock on the file (by inode) per <proc-root>/locks, 0 when not shown.
long lock_holder(int fd, const std::string& proc_root) {
  struct stat st {};
  auto locks = fs::read_file(proc_root + "/locks", 4u << 20);
  if (::fstat(fd, &st) != 0 || !locks) return 0;
  const std::string inode = text::cat(":", st.st_ino, " ");
  std::istringstream in(*locks);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" FLOCK ") == std::string::npos || line.find(inode) == std::string::npos) continue;
    std::istringstream words(line);
    std::string w[5];
    for (auto& x : w) words >> x;
    if (w[1] == "->") continue;  // a waiter, not the holder
    if (auto pid = text::parse_u64(w[4])) return static_cast<long>(*pid);
  }
  return 0;
}

}  // namespace

Result<LedgerLock> LedgerLock::acquire(const std::string& lock_path, std::uint64_t timeout_ms,
                                       const std::string& proc_root, std::string_view what, std::string_view hint) {
  if (auto r = fs::make_dirs(fs::dirname(lock_path), 0755); !r) return std::unexpected(r.error());
  fs::UniqueFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd) return sys_error("cannot open ledger lock " + lock_path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return user_error(text::cat(lock_path, " is not a regular file; refusing to use it as ", what));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (auto pause = std::chrono::microseconds(200); ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0;) {
    if (errno != EWOULDBLOCK && errno != EINTR) return sys_error("cannot lock " + lock_path);
    if (std::chrono::steady_clock::now() >= deadline) {
      const long holder = lock_holder(fd.get(), proc_root);
      return internal_error(text::cat(what, " ", lock_path, " is held",
                                      holder ? text::cat(" by pid ", holder) : std::string(), " for more than ",
                                      timeout_ms / 1000.0, " s", hint));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  return LedgerLock(std::move(fd));
}

Result<LedgerState> load_ledger_file(const std::string& path) {
  auto text = fs::read_file(path, 64u << 20);
  if (!text) {
    if (text.error().err == ENOENT) return LedgerState{};
    return std::unexpected(text.error());
  }
  return parse_ledger(*text, path);
}

namespace {

void crash_probe(fs::AtomicWriteStage stage) {
  fault::point(stage == fs::AtomicWriteStage::temp_written ? "ledger-after-temp-write" : "ledger-before-rename");
}

constexpr std::uint64_t kReserveMargin = 4096;

std::uint64_t size_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// Makes the reserve (created 0600 when missing) at least `bytes` long, every byte allocated. It is
// private to ledger writers, so posix_fallocate's fallback of writing zeros is fine here.
Result<> grow_reserve(const std::string& reserve, std::uint64_t bytes) {
  fs::UniqueFd fd(::open(reserve.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd) return sys_error("cannot open the ledger's reserve " + reserve);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat " + reserve);
  if (!S_ISREG(st.st_mode)) return internal_error(reserve + " is not a regular file; remove it");
  const auto size = std::max<std::uint64_t>(bytes, static_cast<std::uint64_t>(st.st_size));
  if (static_cast<std::uint64_t>(st.st_size) >= bytes && static_cast<std::uint64_t>(st.st_blocks) * 512 >= size)
    return {};
  if (int rc = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(size)); rc != 0)
    return sys_error(text::cat("cannot reserve ", bytes, " bytes in ", reserve, " for releasing bookings"), rc);
  return {};
}

Error refused(Error e, const std::string& path) {
  if (!fs::no_space(e.err)) return e;
  e.message += text::cat(" (the state directory ", fs::dirname(path),
                         " is full); the ledger is unchanged: free space in it or make it larger");
  return e;
}

}  // namespace

std::string ledger_reserve_path(const std::string& path) {
  std::string base = path.ends_with(".json") ? path.substr(0, path.size() - 5) : path;
  return base + ".reserve";
}

Result<> save_ledger_file(const std::string& path, const LedgerState& state) {
  const std::string text = ledger_to_json(state), reserve = ledger_reserve_path(path);
  const bool grows = text.size() > size_of(path);
  // What a later release needs, kept before a write that grows the ledger (a booking, an attach).
  if (auto r = grow_reserve(reserve, text.size() + kReserveMargin); !r && grows)
    return std::unexpected(refused(r.error(), path));
  auto written = fs::write_file_atomic(path, text, 0644, crash_probe);
  if (written || grows || !fs::no_space(written.error().err)) {
    if (!written) return std::unexpected(refused(written.error(), path));
    return written;
  }
  // A write that does not grow the ledger (release, rollback, gc) on a full directory: the reserve's
  // room (and its inode) goes to this write, and the reserve is made again from what it frees.
  ::unlink(reserve.c_str());
  written = fs::write_file_atomic(path, text, 0644, crash_probe);
  if (written) (void)grow_reserve(reserve, text.size() + kReserveMargin);
  return written ? written : std::unexpected(refused(written.error(), path));
}

Result<> fit_ledger_reserve(const std::string& path) {
  const std::string reserve = ledger_reserve_path(path);
  const std::uint64_t want = size_of(path) + kReserveMargin;
  if (size_of(reserve) > want && ::truncate(reserve.c_str(), static_cast<off_t>(want)) != 0)
    return sys_error("cannot shrink " + reserve);
  if (auto r = grow_reserve(reserve, want); !r) return std::unexpected(refused(r.error(), path));
  return {};
}

Result<std::vector<std::string>> remove_stale_temp_files(const std::string& path) {
  const std::string dir = fs::dirname(path);
  const std::string prefix = "." + fs::basename(path) + ".tmp.";
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return sys_error("cannot list " + dir);
  std::vector<std::string> removed;
  while (const dirent* ent = ::readdir(d.get())) {
    std::string name = ent->d_name;
    if (!name.starts_with(prefix)) continue;
    if (::unlinkat(::dirfd(d.get()), name.c_str(), 0) != 0 && errno != ENOENT)
      return sys_error("cannot remove " + dir + "/" + name);
    removed.push_back(dir + "/" + name);
  }
  return removed;
}

}  // namespace gpufrac
