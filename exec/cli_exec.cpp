#include "exec/cli_exec.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "core/fault.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

extern char** environ;

namespace gpufrac {

namespace {

constexpr std::size_t kMaxOutput = 1u << 20;

struct Captured {
  std::string out, err;
};

// Reads both pipes to the end (bounded) without blocking on one while the other fills.
Result<Captured> drain(int out_fd, int err_fd) {
  Captured c;
  std::array<pollfd, 2> fds{pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0}};
  std::array<std::string*, 2> sinks{&c.out, &c.err};
  int open = 2;
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return sys_error("poll on a gpufrac helper's output");
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open;
        continue;
      }
      if (sinks[i]->size() < kMaxOutput) sinks[i]->append(buf, static_cast<std::size_t>(n));
    }
  }
  return c;
}

// The child's own error line without its "gpufrac: " prefix, or a line saying how it ended.
Error child_error(const std::string& err, int status, const std::string& command) {
  std::string line;
  for (const auto& l : text::split(err, '\n'))
    if (!l.empty()) line = l;
  if (line.starts_with("gpufrac: ")) line = line.substr(9);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && !line.empty()) return Error{line, 0, ErrorKind::user};
  if (WIFEXITED(status) && !line.empty()) return Error{line, 0, ErrorKind::internal};
  std::string how = WIFSIGNALED(status) ? text::cat("was killed by signal ", WTERMSIG(status))
                                        : text::cat("exited with status ", WEXITSTATUS(status));
  return Error{text::cat(command, " ", how, line.empty() ? "" : ": " + line), 0, ErrorKind::internal};
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> cli_env(const Config& cfg, char** environ_in) {
  std::vector<std::string> env{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  if (cfg.source.starts_with("/")) env.push_back(std::string(kConfigEnv) + "=" + cfg.source);
  for (char** e = environ_in; e != nullptr && *e != nullptr; ++e) {
    const std::string_view v = *e;
    if (v.starts_with("GPUFRAC_FAKE_NVML_") || v.starts_with(std::string(fault::kEnv) + "=")) env.emplace_back(v);
  }
  return env;
}

Result<std::string> run_cli(const Config& cfg, std::vector<std::string> argv) {
  auto env = cli_env(cfg, environ);
  const std::string command =
      text::join(std::vector<std::string>(argv.begin(), argv.begin() + std::min<std::size_t>(3, argv.size())), " ");
  auto argv_c = c_strings(argv), env_c = c_strings(env);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return sys_error("pipe for " + cfg.cli_path);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return sys_error("pipe for " + cfg.cli_path);
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execve(argv_c[0], argv_c.data(), env_c.data());
    ::dprintf(STDERR_FILENO, "gpufrac: cannot run %s (cli.path): %s\n", argv_c[0], std::strerror(errno));
    ::_exit(2);
  }
  ::close(out[1]);
  ::close(err[1]);
  fs::UniqueFd out_r(out[0]), err_r(err[0]);
  if (pid < 0) return sys_error("fork for " + cfg.cli_path);
  auto captured = drain(out_r.get(), err_r.get());
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return sys_error("waiting for " + cfg.cli_path);
  if (!captured) return std::unexpected(captured.error());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return captured->out;
  return std::unexpected(child_error(captured->err, status, command));
}

}  // namespace gpufrac
