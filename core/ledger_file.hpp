// The ledger's file mechanics: an exclusive flock on the lock file, loading (a missing file is an
// empty ledger), saving through write_file_atomic (temp + fsync + rename + directory fsync), and
// removing temp files a killed writer left behind. ledger.hpp builds the operations on these.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/ledger_entry.hpp"

namespace gpufrac {

// Holds flock(LOCK_EX) on the lock file while alive. The kernel drops it if the holder dies,
// so a killed hook never leaves the ledger locked.
class LedgerLock {
 public:
  // Creates the lock file (and its directory) when missing, then waits for the lock at most
  // timeout_ms; longer is an error naming the holder's pid when <proc_root>/locks shows it.
  // `what` and `hint` word that error for other locks of the same kind (gpufrac-dra's).
  static Result<LedgerLock> acquire(const std::string& lock_path, std::uint64_t timeout_ms = 10000,
                                    const std::string& proc_root = "/proc", std::string_view what = "the ledger lock",
                                    std::string_view hint = " (lock-timeout); is a gpufrac process stuck?");

 private:
  explicit LedgerLock(fs::UniqueFd fd) : fd_(std::move(fd)) {}
  fs::UniqueFd fd_;
};

Result<LedgerState> load_ledger_file(const std::string& path);
// Crash points ledger-after-temp-write and ledger-before-rename (core/fault.hpp) are inside.
Result<> save_ledger_file(const std::string& path, const LedgerState& state);
// Removes "<dir>/.<name>.tmp.*" left by writers killed mid-write; call with the lock held.
Result<std::vector<std::string>> remove_stale_temp_files(const std::string& path);

}  // namespace gpufrac
