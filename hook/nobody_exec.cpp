#include "hook/nobody_exec.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "core/fs.hpp"

namespace gpufrac::hook {

namespace {

constexpr std::size_t kMaxOutput = 4096;
constexpr std::size_t kStackBytes = 64u << 10;

struct ExecPlan {
  int out_fd;
  int program_fd;
  const char* const* argv;
  const sigset_t* mask;  // the caller's, restored for the program
};

// out_fd as `to` without close-on-exec (dup3 refuses a descriptor onto itself: then the flag is
// cleared), in the child's own descriptor table (no CLONE_FILES).
long output_to(int out_fd, int to) {
  return out_fd == to ? ::syscall(SYS_fcntl, to, F_SETFD, 0) : ::syscall(SYS_dup3, out_fd, to, 0);
}

// The child shares the caller's memory while the caller waits: raw system calls only (no
// allocation, no glibc setxid broadcast) until the exec replaces it.
int exec_child(void* arg) {
  const auto* p = static_cast<const ExecPlan*>(arg);
  static const char* const empty_env[] = {nullptr};
  // A caller started with stdio closed holds the program at 0-2: moved above before the dups.
  const long program = p->program_fd > 2 ? p->program_fd : ::syscall(SYS_fcntl, p->program_fd, F_DUPFD_CLOEXEC, 3);
  if (program < 0 || output_to(p->out_fd, 1) < 0 || output_to(p->out_fd, 2) < 0 ||
      ::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, kNobody, kNobody, kNobody) != 0 ||
      ::syscall(SYS_setresuid, kNobody, kNobody, kNobody) != 0 ||
      ::syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    ::syscall(SYS_exit, 126);
  ::syscall(SYS_close, 0);
  ::syscall(SYS_close_range, 3, ~0u, CLOSE_RANGE_CLOEXEC);
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, p->mask, nullptr, _NSIG / 8);
  ::syscall(SYS_execveat, program, "", p->argv, empty_env, AT_EMPTY_PATH);
  ::syscall(SYS_exit, 127);
  return 127;
}

// Every signal stays blocked from before the clone until the program runs (a handler of the caller
// must not run on the shared memory).
pid_t spawn(int out_fd, int program_fd, const char* const* argv) {
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  ExecPlan plan{out_fd, program_fd, argv, &old};
  const pid_t pid =
      ::clone(exec_child, static_cast<char*>(stack) + kStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
  const int saved = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::munmap(stack, kStackBytes);
  errno = saved;
  return pid;
}

// Reads to the end (a program that says a lot never blocks on a full pipe), keeping the start.
void drain(int fd, std::string& kept) {
  char buf[kMaxOutput];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    kept.append(buf, std::min(static_cast<std::size_t>(n), kMaxOutput - kept.size()));
  }
}

}  // namespace

Result<ProgramRun> run_as_nobody(int program_fd, const char* const* argv) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd rd(out[0]), wr(out[1]);
  const pid_t pid = spawn(wr.get(), program_fd, argv);
  if (pid < 0) return sys_error(std::string("cannot start ") + argv[0]);
  wr = fs::UniqueFd();
  ProgramRun run;
  drain(rd.get(), run.output);
  while (::waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
  }
  return run;
}

}  // namespace gpufrac::hook
