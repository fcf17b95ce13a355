// spawn_mps_daemon (nvml/mps_daemon.hpp) and the process handling it needs (nvml/mps_spawn.hpp).
#include "nvml/mps_spawn.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "core/ledger/ledger_entry.hpp"
#include "core/plan/plan_mps.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "nvml/mps_daemon.hpp"
#include "nvml/mps_dirs.hpp"

extern char** environ;

namespace gpufrac {

namespace {

constexpr rlim_t kMpsOpenFiles = 16384;
constexpr int kWaitPidS = 10;  // for the daemon's pid (the starter), and then some (its caller)

// Exit codes of the start, as the caller reports them.
constexpr int kNoDaemon = 123;   // no pid of a live child of the starter in 10 s
constexpr int kNoStarter = 124;  // the starter could not become a subreaper or fork
constexpr int kNoStdio = 125;
constexpr int kNoNamespace = 126;

struct Report {
  int code;  // 0: pid is the daemon
  int pid;
};

// In the child: a mount namespace of its own whose /dev/shm is the GPU's shm tmpfs, more open
// files, its stdio, then the daemon. Only async-signal-safe calls.
[[noreturn]] void exec_daemon(const char* control, const char* shm, int null_fd, int log_fd, char** argv, char** envp) {
  if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
      ::mount(shm, "/dev/shm", nullptr, MS_BIND, nullptr) != 0)
    ::_exit(kNoNamespace);
  if (!only_stdio(null_fd, log_fd, log_fd)) ::_exit(kNoStdio);
  struct rlimit nofile {};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < kMpsOpenFiles) {
    nofile.rlim_cur =
        nofile.rlim_max == RLIM_INFINITY || nofile.rlim_max >= kMpsOpenFiles ? kMpsOpenFiles : nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  ::execve(control, argv, envp);
  ::_exit(127);
}

// The pid in the pid file (digits then a newline), or 0. Async-signal-safe.
pid_t pid_in(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  char buf[24];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  long pid = 0;
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] == '\n') return i > 0 && pid <= kMaxPid ? static_cast<pid_t>(pid) : 0;
    if (buf[i] < '0' || buf[i] > '9' || pid > kMaxPid) return 0;
    pid = pid * 10 + (buf[i] - '0');
  }
  return 0;
}

// True when pid is a live child of this process (the kernel's word, nothing reaped).
bool live_child(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

// The daemon: the pid its pid file names once that is a live child of this subreaper.
pid_t wait_daemon(const char* pid_file) {
  struct timespec now {
  }, deadline{};
  ::clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += kWaitPidS;
  for (;;) {
    if (const pid_t pid = pid_in(pid_file); pid > 0 && live_child(pid)) return pid;
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > deadline.tv_sec || (now.tv_sec == deadline.tv_sec && now.tv_nsec > deadline.tv_nsec)) return 0;
    struct timespec pause {
      0, 20 * 1000 * 1000
    };
    ::nanosleep(&pause, nullptr);
  }
}

struct StarterArgs {
  const char* control;
  const char* shm;
  const char* pid_file;
  int null_fd, log_fd;
  int report_r, done_w;  // the caller's ends, closed in the starter (done_w open there: no EOF)
  char** argv;
  char** envp;
};

[[noreturn]] void report_and_exit(int fd, Report r) {
  (void)!::write(fd, &r, sizeof r);
  ::_exit(r.code == 0 ? 0 : 1);
}

// The starter (a child of the caller): a subreaper that runs `control -d`, names the daemon it left
// behind, and stays until the caller has read the daemon's start time (its end of `done` closed).
// Only async-signal-safe calls: the caller may have threads (gpufrac-dra).
[[noreturn]] void run_starter(const StarterArgs& a, int report_fd, int done_fd) {
  ::close(a.report_r);
  ::close(a.done_w);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) report_and_exit(report_fd, {kNoStarter, 0});
  const pid_t child = ::fork();
  if (child < 0) report_and_exit(report_fd, {kNoStarter, 0});
  if (child == 0) exec_daemon(a.control, a.shm, a.null_fd, a.log_fd, a.argv, a.envp);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) report_and_exit(report_fd, {kNoStarter, 0});
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code != 0) report_and_exit(report_fd, {code, 0});
  const pid_t daemon = wait_daemon(a.pid_file);
  if (daemon <= 0) report_and_exit(report_fd, {kNoDaemon, 0});
  const Report r{0, daemon};
  if (::write(report_fd, &r, sizeof r) != sizeof r) ::_exit(1);
  char byte;
  while (::read(done_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

// The starter's report, within kWaitPidS + 5 s (the starter is killed after that).
Result<Report> read_report(int fd, pid_t starter) {
  struct pollfd p {
    fd, POLLIN, 0
  };
  int ready;
  while ((ready = ::poll(&p, 1, (kWaitPidS + 5) * 1000)) < 0 && errno == EINTR) {
  }
  Report r{};
  if (ready > 0 && ::read(fd, &r, sizeof r) == sizeof r) return r;
  ::kill(starter, SIGKILL);
  return internal_error("the MPS control daemon's starter did not report");
}

std::string failure_text(int code) {
  switch (code) {
    case kNoNamespace:
      return ": no mount namespace with its shm directory at /dev/shm";
    case kNoStdio:
      return ": cannot set its standard streams or close other files";
    case kNoStarter:
      return ": cannot start it under a subreaper";
    case kNoDaemon:
      return text::cat(": no daemon of its own wrote its pid to its pipe directory in ", kWaitPidS, " s");
    default:
      return "";
  }
}

}  // namespace

bool only_stdio(int in, int out, int err) {
  const int given[3] = {in, out, err};
  int high[3];
  for (int i = 0; i < 3; ++i)
    if ((high[i] = ::fcntl(given[i], F_DUPFD_CLOEXEC, 3)) < 0 && errno != EBADF) return false;
  for (int i = 0; i < 3; ++i) {
    if (high[i] < 0)
      ::close(i);
    else if (::dup2(high[i], i) < 0)
      return false;
  }
  return ::syscall(SYS_close_range, 3, ~0u, 0) == 0;
}

std::vector<std::string> mps_daemon_env(const Config& cfg, const std::string& gpu_uuid) {
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "CUDA_VISIBLE_DEVICES=" + gpu_uuid,
                                  "CUDA_MPS_PIPE_DIRECTORY=" + mps_pipe_dir(cfg, gpu_uuid),
                                  "CUDA_MPS_LOG_DIRECTORY=" + mps_log_dir(cfg, gpu_uuid)};
  for (char** e = environ; e && *e; ++e)
    if (std::string_view(*e).starts_with("GPUFRAC_FAKE_")) env.emplace_back(*e);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

Result<MpsSpawned> spawn_mps_daemon(const Config& cfg, const std::string& control, const std::string& gpu_uuid) {
  if (auto r = fresh_mps_dirs(cfg, gpu_uuid); !r) return std::unexpected(r.error());
  std::vector<std::string> args = {"nvidia-cuda-mps-control", "-d"}, env = mps_daemon_env(cfg, gpu_uuid);
  auto argv = c_strings(args), envp = c_strings(env);
  const std::string shm = mps_shm_dir(cfg, gpu_uuid), log = mps_log_dir(cfg, gpu_uuid) + "/control.log";
  const std::string pid_file = mps_pipe_dir(cfg, gpu_uuid) + "/nvidia-cuda-mps-control.pid";
  fs::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd) return sys_error("cannot open /dev/null");
  fs::UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!log_fd) return sys_error("cannot open " + log);
  int report[2], done[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd report_r(report[0]), report_w(report[1]);
  if (::pipe2(done, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd done_r(done[0]), done_w(done[1]);
  const StarterArgs a{control.c_str(), shm.c_str(),  pid_file.c_str(), null_fd.get(), log_fd.get(),
                      report_r.get(),  done_w.get(), argv.data(),      envp.data()};
  const pid_t starter = ::fork();
  if (starter < 0) return sys_error("cannot fork to start the MPS control daemon");
  if (starter == 0) run_starter(a, report_w.get(), done_r.get());
  report_w = fs::UniqueFd();
  done_r = fs::UniqueFd();
  auto r = read_report(report_r.get(), starter);
  // The daemon is the starter's child until `done` closes: its pid cannot be reused meanwhile.
  Result<ProcStat> stat =
      r && r->code == 0 ? read_proc_stat(cfg.proc_root, r->pid) : Result<ProcStat>(internal_error("no daemon"));
  done_w = fs::UniqueFd();
  int status = 0;
  while (::waitpid(starter, &status, 0) < 0 && errno == EINTR) {
  }
  if (!r) return std::unexpected(r.error());
  if (r->code != 0)
    return internal_error(
        text::cat(control, " -d for ", gpu_uuid, " failed (status ", r->code, failure_text(r->code), "); see ", log));
  if (!stat) return std::unexpected(stat.error().wrap(text::cat("the MPS control daemon ", r->pid)));
  return MpsSpawned{r->pid, stat->start_time};
}

}  // namespace gpufrac
