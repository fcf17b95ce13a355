#include "runtime-wrapper/runtime_exec.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <sys/stat.h>
#include <unistd.h>

#include "core/text.hpp"

namespace gpufrac::wrapper {

namespace {

bool is_self(const struct stat& st, const std::optional<FileId>& self) {
  return self && st.st_dev == self->dev && st.st_ino == self->ino;
}

bool usable(const std::string& path, const std::optional<FileId>& self) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return !is_self(st, self) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> find_one(const std::string& name, const std::string& path_env,
                                    const std::optional<FileId>& self) {
  if (name.find('/') != std::string::npos) {
    if (name.front() != '/') return std::nullopt;  // relative paths are never resolved
    return usable(name, self) ? std::optional(name) : std::nullopt;
  }
  for (const auto& dir : text::split(path_env, ':')) {
    if (dir.empty() || dir.front() != '/') continue;
    std::string candidate = dir.back() == '/' ? dir + name : dir + "/" + name;
    if (usable(candidate, self)) return candidate;
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> resolve_runtime(const std::vector<std::string>& runtimes,
                                    const std::optional<std::string>& path_env, const std::optional<FileId>& self) {
  const std::string path = path_env.value_or(kDefaultPath);
  for (const auto& name : runtimes)
    if (auto found = find_one(name, path, self)) return *found;
  return internal_error("runtimes: none of " + text::join(runtimes, ", ") +
                        " is an executable file (names are looked up in the absolute directories of PATH " +
                        text::quote(path, 256) + "); name runc, crun or an absolute path in the config's runtimes:");
}

std::optional<FileId> self_file() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

Error exec_runtime(const std::string& runtime, int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  if (args.empty()) args.push_back(nullptr);
  args[0] = const_cast<char*>(runtime.c_str());
  args.push_back(nullptr);
  ::execv(runtime.c_str(), args.data());
  return sys_error("cannot execute the runtime " + runtime).error();
}

namespace {

pid_t g_child = 0;
void forward(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

}  // namespace

Result<int> run_runtime(const std::string& runtime, int argc, char** argv) {
  const pid_t child = ::fork();
  if (child < 0) return sys_error("cannot start the runtime " + runtime);
  if (child == 0) {
    (void)exec_runtime(runtime, argc, argv);
    ::_exit(127);
  }
  g_child = child;
  struct sigaction sa {};
  sa.sa_handler = forward;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH}) ::sigaction(sig, &sa, nullptr);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return sys_error("cannot wait for the runtime " + runtime);
  return status;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace gpufrac::wrapper
