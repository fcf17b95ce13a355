#include "reclaim/reclaim_start.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/log.hpp"
#include "nvml/inventory_cache.hpp"
#include "reclaim/reclaim_keeper.hpp"
#include "reclaim/reclaim_log.hpp"
#include "reclaim/reclaim_shares.hpp"
#include "reclaim/reclaimer.hpp"

namespace gpufrac::reclaim {

namespace {

constexpr int kPassMs = 20;
constexpr int kIdlePasses = 100;        // about 2 s without a burst booking before it leaves
constexpr int kKeeperCheckPasses = 50;  // about once a second

// The reclaimer's lock, taken without waiting; an empty fd when another reclaimer holds it.
Result<fs::UniqueFd> take_lock(const Config& cfg) {
  if (auto r = fs::make_dirs(cfg.state_dir, 0755); !r) return std::unexpected(r.error());
  fs::UniqueFd fd(::open(reclaimer_lock_path(cfg).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return sys_error("cannot open " + reclaimer_lock_path(cfg));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
  if (errno == EWOULDBLOCK) return fs::UniqueFd();
  return sys_error("cannot lock " + reclaimer_lock_path(cfg));
}

// The running reclaimer's pid in its lock file (what `gpufrac status` and tests read).
void write_pid(int fd) {
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    log::warn("reclaim: cannot write its pid into its lock file");
}

}  // namespace

bool leave_when_idle(const Config& cfg, fs::UniqueFd& lock) {
  if (!fs::exists(cfg.ledger_path())) return true;
  bool leave = false;
  auto r = Ledger(LedgerOptions::from(cfg)).update([&](LedgerState& s) -> Result<bool> {
    if (has_burst_booking(s)) return false;
    lock = fs::UniqueFd();  // closed while the ledger's lock is held
    leave = true;
    return false;
  });
  if (!r) log::warn("reclaim: " + r.error().message);
  return leave;
}

int run_reclaimer_locked(const Config& cfg, fs::UniqueFd lock) {
  auto view = ProcessView::open(cfg);
  if (!view) {
    log::error("reclaim: " + view.error().message + "; burst limits stay at their requests");
    return 1;
  }
  auto inv = inventory_for_reading(cfg);
  if (!inv) {
    log::error("reclaim: " + inv.error().message);
    return 2;
  }
  write_pid(lock.get());
  log::info("reclaim: the burst reclaimer runs (burst.reclaim: " + std::string(to_string(cfg.burst.reclaim)) + ")");
  Reclaimer reclaimer(cfg, std::move(*view), std::move(*inv));
  for (int idle = 0, passes = 0;;) {
    auto more = reclaimer.pass();
    if (!more) log::warn("reclaim: " + more.error().message);
    // A keeper beside it (reclaim/reclaim_keeper.hpp), checked about once a second; only after a pass
    // that ran through, so that a reclaimer that cannot run is not restarted in a loop.
    if (more && passes++ % kKeeperCheckPasses == 0) ensure_keeper(cfg);
    idle = more && !*more ? idle + 1 : 0;
    if (idle >= kIdlePasses && leave_when_idle(cfg, lock)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(kPassMs));
  }
  log::info("reclaim: no booking has a burst limit; the reclaimer leaves");
  return 0;
}

void detach_from_caller() {
  ::setsid();
  if (::fork() != 0) ::_exit(0);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) ::dup2(null, fd);
  ::close_range(3, ~0u, 0);
  if (::chdir("/") != 0) ::_exit(2);
}

namespace {

// The grandchild (detach_from_caller) runs the reclaimer.
[[noreturn]] void detached(const Config& cfg) {
  detach_from_caller();
  log::init(cfg.log, "gpufrac-reclaim");
  auto lock = take_lock(cfg);
  ::_exit(lock && *lock ? run_reclaimer_locked(cfg, std::move(*lock)) : 0);
}

}  // namespace

std::string reclaimer_lock_path(const Config& cfg) {
  return cfg.state_dir + "/reclaimer.lock";
}

Result<int> run_reclaimer_here(const Config& cfg) {
  auto lock = take_lock(cfg);
  if (!lock) return std::unexpected(lock.error());
  if (!*lock) return -1;
  return run_reclaimer_locked(cfg, std::move(*lock));
}

Result<bool> start_detached_reclaimer(const Config& cfg) {
  auto lock = take_lock(cfg);
  if (!lock) return std::unexpected(lock.error());
  if (!*lock) return false;
  *lock = fs::UniqueFd();  // the detached reclaimer takes it again
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return sys_error("cannot start the reclaimer (fork)");
  if (child == 0) detached(cfg);
  int status = 0;
  ::waitpid(child, &status, 0);
  return true;
}

std::string tidy_reclaimer(const Config& cfg, const LedgerState& state) {
  if (has_burst_booking(state)) {
    auto started = start_detached_reclaimer(cfg);
    if (!started) return "reclaimer: " + started.error().message;
    return *started ? "Started the burst reclaimer (a booking has a burst limit and none ran)." : "";
  }
  auto lock = take_lock(cfg);
  if (!lock || !*lock || !fs::exists(reclaim_log_path(cfg))) return "";
  std::error_code ec;
  std::filesystem::remove(reclaim_log_path(cfg), ec);
  std::filesystem::remove(reclaimer_lock_path(cfg), ec);
  if (fs::exists(keeper_lock_path(cfg)))
    if (fs::UniqueFd keeper(::open(keeper_lock_path(cfg).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        keeper && ::flock(keeper.get(), LOCK_EX | LOCK_NB) == 0)
      std::filesystem::remove(keeper_lock_path(cfg), ec);  // a keeper that runs leaves by itself
  return "Removed the burst reclaimer's files (no booking has a burst limit).";
}

}  // namespace gpufrac::reclaim
