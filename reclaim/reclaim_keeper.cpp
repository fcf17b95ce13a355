#include "reclaim/reclaim_keeper.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#include "core/fault.hpp"
#include "core/fs.hpp"
#include "core/log.hpp"
#include "reclaim/reclaim_start.hpp"

namespace gpufrac::reclaim {

namespace {

// The keeper's lock, taken without waiting; an empty fd when another keeper holds it.
Result<fs::UniqueFd> take_keeper_lock(const Config& cfg) {
  const std::string path = keeper_lock_path(cfg);
  fs::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return sys_error("cannot open " + path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
  if (errno == EWOULDBLOCK) return fs::UniqueFd();
  return sys_error("cannot lock " + path);
}

// Whether fd is still the file at path (gc removes the reclaimer's files once no burst booking is
// left: a lock taken on a removed file guards nothing).
bool same_file(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

[[noreturn]] void exec_keeper(std::vector<char*>& argv, std::vector<char*>& envp) {
  detach_from_caller();
  ::execve(argv[0], argv.data(), envp.data());
  ::_exit(127);
}

}  // namespace

std::string keeper_lock_path(const Config& cfg) {
  return cfg.state_dir + "/reclaimer.keeper";
}

void ensure_keeper(const Config& cfg) {
  {
    auto lock = take_keeper_lock(cfg);
    if (!lock) return log::warn("reclaim: no keeper: " + lock.error().message);
    if (!*lock) return;  // one runs
  }
  if (::access(cfg.cli_path.c_str(), X_OK) != 0) {  // said once, not tried again every second
    static bool said = false;
    if (!std::exchange(said, true))
      log::warn("reclaim: no keeper: cli.path " + cfg.cli_path + " is not an executable gpufrac");
    return;
  }
  // Made before fork: between fork and exec the child only makes async-signal-safe calls (the
  // reclaimer may have threads, NVML's).
  std::vector<std::string> args{cfg.cli_path, "reclaim", "keep"};
  if (fs::exists(cfg.source)) args.insert(args.end(), {"--config", cfg.source});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment, less a fault a crash test set on this reclaimer (core/fault.hpp): the keeper
  // is the one that must survive it.
  std::vector<char*> envp;
  const std::string fault_prefix = std::string(fault::kEnv) + "=";
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).substr(0, fault_prefix.size()) != fault_prefix) envp.push_back(*e);
  envp.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return log::warn("reclaim: cannot start its keeper (fork)");
  if (child == 0) exec_keeper(argv, envp);
  int status = 0;
  ::waitpid(child, &status, 0);
}

Result<int> run_keeper(const Config& cfg) {
  auto keep = take_keeper_lock(cfg);
  if (!keep) return std::unexpected(keep.error());
  if (!*keep) return 0;
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(keep->get(), 0) != 0 || ::pwrite(keep->get(), pid.data(), pid.size(), 0) < 0)
    log::warn("reclaim: the keeper cannot write its pid into " + keeper_lock_path(cfg));
  const std::string path = reclaimer_lock_path(cfg);
  fs::UniqueFd lock(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!lock) return 0;  // removed: no burst booking is left
  while (::flock(lock.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sys_error("cannot lock " + path);
  if (!same_file(lock.get(), path) || leave_when_idle(cfg, lock)) return 0;
  *keep = fs::UniqueFd();  // the reclaimer it becomes starts the next keeper
  log::warn("reclaim: the reclaimer stopped while a booking has a burst limit; its keeper takes over");
  return run_reclaimer_locked(cfg, std::move(lock));
}

}  // namespace gpufrac::reclaim
