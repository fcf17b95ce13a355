#include "core/ledger_file.hpp"

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
#include "core/ledger_json.hpp"
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

}  // namespace

Result<> save_ledger_file(const std::string& path, const LedgerState& state) {
  return fs::write_file_atomic(path, ledger_to_json(state), 0644, crash_probe);
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
