// The ledger's file mechanics: an exclusive flock on the lock file, loading (a missing file is an
// empty ledger), saving through write_file_atomic (temp + fsync + rename + directory fsync), and
// removing temp files a killed writer left behind. ledger.hpp builds the operations on these.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger_entry.hpp"

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
// Writes the ledger (temp + fsync + rename, so it needs room for a whole copy) and keeps its
// reserve, <dir>/ledger.reserve (ledger_reserve_path): a file of the ledger's size plus 4 KiB with
// every byte allocated, so that a release always has room. A write that grows the ledger (a booking,
// an attach) first grows the reserve, and is refused when that fails (nothing is changed). A write
// that does not grow it (release, rollback, gc) that hits ENOSPC or EDQUOT removes the reserve,
// writes again into the room it gave back, then makes it again. Call with the lock held.
// Crash points ledger-after-temp-write and ledger-before-rename (core/fault.hpp) are inside.
Result<> save_ledger_file(const std::string& path, const LedgerState& state);
// "<dir>/ledger.reserve" for "<dir>/ledger.json".
std::string ledger_reserve_path(const std::string& path);
// Sets the reserve to the ledger's size plus the margin (gc: made again when missing, shrunk after
// the ledger shrank). Call with the lock held.
Result<> fit_ledger_reserve(const std::string& path);
// Removes "<dir>/.<name>.tmp.*" left by writers killed mid-write; call with the lock held.
Result<std::vector<std::string>> remove_stale_temp_files(const std::string& path);

}  // namespace gpufrac
