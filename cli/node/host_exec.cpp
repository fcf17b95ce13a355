#include "cli/node/host_exec.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace gpufrac::cli::node {

namespace {

Result<pid_t> spawn(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return sys_error("cannot fork to run " + argv[0]);
  if (pid == 0) {
    if (quiet) {
      const int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0) {
        ::dup2(null, 1);
        ::dup2(null, 2);
      }
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace

std::vector<std::string> host_argv(const std::string& root, std::vector<std::string> argv) {
  if (root.empty() || root == "/") return argv;
  argv.insert(argv.begin(), {"chroot", root});
  return argv;
}

Result<int> run_on_host(const std::string& root, const std::vector<std::string>& argv, bool quiet) {
  auto pid = spawn(host_argv(root, argv), quiet);
  if (!pid) return std::unexpected(pid.error());
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0)
    if (errno != EINTR) return sys_error("cannot wait for " + argv[0]);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Result<pid_t> start_on_host(const std::string& root, const std::vector<std::string>& argv) {
  return spawn(host_argv(root, argv), false);
}

}  // namespace gpufrac::cli::node
