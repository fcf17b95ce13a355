#include "nvml/mps_daemon.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger_entry.hpp"
#include "core/plan/plan_mps.hpp"
#include "core/process.hpp"
#include "core/text.hpp"

extern char** environ;

namespace gpufrac {

namespace {

constexpr const char* kPidFile = "nvidia-cuda-mps-control.pid";
constexpr rlim_t kMpsOpenFiles = 16384;
constexpr std::chrono::seconds kAnswerTimeout{10};

// PATH, the daemon's CUDA variables and the caller's GPUFRAC_FAKE_* (set only by tests: the fake
// driver's state).
std::vector<std::string> daemon_env(const Config& cfg, const std::string& gpu_uuid) {
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

// What the daemon starts with: stdin /dev/null, stdout and stderr appended to its log directory's
// control.log, nothing else of its starter (the caller's locks and pipes must not live on in it).
struct DaemonStdio {
  int null_fd, log_fd;
};

// In a child: fds 0-2 as given (moved above 2 first, so that one given at 0-2 is not overwritten
// before it is placed; one given closed stays closed), every other fd closed (the caller's are never
// inherited: a lock or a pipe a daemon held would outlive the caller's use of it).
// Async-signal-safe.
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

// In the child: a mount namespace of its own whose /dev/shm is the GPU's shm directory, more open
// files, its stdio, then the daemon. Only async-signal-safe calls.
[[noreturn]] void exec_daemon(const char* control, const char* shm, DaemonStdio io, char** argv, char** envp) {
  if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
      ::mount(shm, "/dev/shm", nullptr, MS_BIND, nullptr) != 0)
    ::_exit(126);
  if (!only_stdio(io.null_fd, io.log_fd, io.log_fd)) ::_exit(125);
  struct rlimit nofile {};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < kMpsOpenFiles) {
    nofile.rlim_cur =
        nofile.rlim_max == RLIM_INFINITY || nofile.rlim_max >= kMpsOpenFiles ? kMpsOpenFiles : nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  ::execve(control, argv, envp);
  ::_exit(127);
}

Result<int> wait_child(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return sys_error("cannot wait for the MPS control daemon's start");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The pid the daemon wrote in its pipe directory, once it is there.
Result<std::int64_t> wait_pid_file(const std::string& pipe) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    if (auto text = fs::read_file(pipe + "/" + kPidFile, 64); text && text->ends_with("\n")) {
      auto pid = text::parse_u64(std::string_view(*text).substr(0, text->size() - 1));
      if (pid && *pid > 0 && *pid <= static_cast<std::uint64_t>(kMaxPid)) return static_cast<std::int64_t>(*pid);
    }
    if (std::chrono::steady_clock::now() > deadline)
      return internal_error(text::cat("the MPS control daemon wrote no pid to ", pipe, "/", kPidFile, " in 10 s"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The control shell's output up to its end, at most 1 MiB, within kAnswerTimeout: a daemon that
// hangs must not hold the GPU's lock (and a container's start) for ever; the shell is killed then.
Result<std::string> read_answer(int fd, pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + kAnswerTimeout;
  std::string out;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    struct pollfd p {
      fd, POLLIN, 0
    };
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      ::kill(child, SIGKILL);
      return internal_error(text::cat("the MPS control daemon did not answer within ", kAnswerTimeout.count(), " s"));
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot read the MPS control shell's output");
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > (1u << 20)) return internal_error("the MPS control shell's output is over 1 MiB");
  }
}

}  // namespace

Result<MpsGpuLock> MpsGpuLock::acquire(const Config& cfg, const std::string& gpu_uuid) {
  if (auto r = fs::make_dirs(cfg.state_dir, 0755); !r) return std::unexpected(r.error());
  const std::string path = mps_lock_path(cfg, gpu_uuid);
  fs::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return sys_error("cannot open MPS lock " + path);
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sys_error("cannot lock " + path);
  return MpsGpuLock(std::move(fd));
}

const char* to_string(MpsDaemonState s) {
  return s == MpsDaemonState::running ? "running" : s == MpsDaemonState::stopping ? "stopping" : "starting";
}

std::string mps_record_path(const Config& cfg, const std::string& gpu_uuid) {
  return mps_dir(cfg, gpu_uuid) + "/daemon.json";
}

Result<> write_mps_record(const Config& cfg, const MpsDaemonRecord& r) {
  if (auto d = fs::make_dirs(mps_dir(cfg, r.gpu_uuid), 0755); !d) return d;
  nlohmann::json doc{{"gpu", r.gpu_uuid}, {"state", to_string(r.state)}, {"prior_compute_mode", r.prior_compute_mode},
                     {"pid", r.pid},      {"pid_start", r.pid_start},    {"time", r.time}};
  return fs::write_file_atomic(mps_record_path(cfg, r.gpu_uuid), doc.dump() + "\n", 0600);
}

Result<std::optional<MpsDaemonRecord>> read_mps_record(const Config& cfg, const std::string& gpu_uuid) {
  const std::string path = mps_record_path(cfg, gpu_uuid);
  auto text = fs::read_file(path, 64u << 10);
  if (!text) {
    if (text.error().err == ENOENT) return std::optional<MpsDaemonRecord>();
    return std::unexpected(text.error());
  }
  try {
    auto doc = nlohmann::json::parse(*text);
    const std::string state = doc.at("state").get<std::string>();
    if (doc.at("gpu") != gpu_uuid || (state != "starting" && state != "running" && state != "stopping"))
      throw std::runtime_error("another GPU or state");
    MpsDaemonRecord r{gpu_uuid,
                      state == "running"    ? MpsDaemonState::running
                      : state == "stopping" ? MpsDaemonState::stopping
                                            : MpsDaemonState::starting,
                      doc.at("prior_compute_mode").get<unsigned>(),
                      doc.at("pid").get<std::int64_t>(),
                      doc.at("pid_start").get<std::uint64_t>(),
                      doc.at("time").get<std::int64_t>()};
    return std::optional<MpsDaemonRecord>(r);
  } catch (const std::exception& e) {
    return internal_error(text::cat(path, ": not a gpufrac MPS daemon record (", e.what(),
                                    "); stop the GPU's nvidia-cuda-mps-control by hand, then remove it"));
  }
}

std::vector<std::string> mps_recorded_gpus(const Config& cfg) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(cfg.state_dir + "/mps", ec)) {
    const std::string name = d.path().filename().string();
    if (name.starts_with("GPU-") && fs::exists(mps_record_path(cfg, name))) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<> remove_mps_files(const Config& cfg, const std::string& gpu_uuid) {
  std::error_code ec;
  std::filesystem::remove_all(mps_dir(cfg, gpu_uuid), ec);
  if (ec) return internal_error("cannot remove " + mps_dir(cfg, gpu_uuid) + ": " + ec.message());
  return {};
}

Result<std::string> mps_control_path(const Inventory& inv) {
  for (const auto& f : inv.driver.files)
    if (f.kind == DriverFileKind::binary && fs::basename(f.container_path) == "nvidia-cuda-mps-control")
      return f.host_path;
  return user_error(
      "the NVIDIA driver's nvidia-cuda-mps-control was not found (SM sharing runs it); install the driver's "
      "utilities and run gpufrac info --refresh");
}

Result<std::int64_t> spawn_mps_daemon(const Config& cfg, const std::string& control, const std::string& gpu_uuid) {
  for (const auto& dir : {mps_pipe_dir(cfg, gpu_uuid), mps_shm_dir(cfg, gpu_uuid), mps_log_dir(cfg, gpu_uuid)})
    if (auto r = fs::make_dirs(dir, 0755); !r) return std::unexpected(r.error());
  ::chmod(mps_shm_dir(cfg, gpu_uuid).c_str(), 01777);  // /dev/shm's mode: every container user writes there
  ::unlink((mps_pipe_dir(cfg, gpu_uuid) + "/" + kPidFile).c_str());
  std::vector<std::string> args = {"nvidia-cuda-mps-control", "-d"}, env = daemon_env(cfg, gpu_uuid);
  auto argv = c_strings(args), envp = c_strings(env);
  const std::string shm = mps_shm_dir(cfg, gpu_uuid), log = mps_log_dir(cfg, gpu_uuid) + "/control.log";
  fs::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd) return sys_error("cannot open /dev/null");
  fs::UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!log_fd) return sys_error("cannot open " + log);
  const pid_t child = ::fork();
  if (child < 0) return sys_error("cannot fork to start the MPS control daemon");
  if (child == 0) exec_daemon(control.c_str(), shm.c_str(), {null_fd.get(), log_fd.get()}, argv.data(), envp.data());
  auto status = wait_child(child);
  if (!status) return std::unexpected(status.error());
  if (*status != 0)
    return internal_error(text::cat(control, " -d for ", gpu_uuid, " failed (status ", *status,
                                    *status == 126   ? ": no mount namespace with its shm directory at /dev/shm"
                                    : *status == 125 ? ": cannot set its standard streams or close other files"
                                                     : "",
                                    "); see ", log));
  return wait_pid_file(mps_pipe_dir(cfg, gpu_uuid));
}

Result<std::string> mps_command(const Config& cfg, const std::string& control, const std::string& gpu_uuid,
                                const std::string& commands) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd out_r(out[0]), out_w(out[1]);
  std::vector<std::string> args = {"nvidia-cuda-mps-control"}, env = daemon_env(cfg, gpu_uuid);
  auto argv = c_strings(args), envp = c_strings(env);
  const pid_t child = ::fork();
  if (child < 0) return sys_error("cannot fork to run " + control);
  if (child == 0) {
    if (!only_stdio(in_r.get(), out_w.get(), 2)) ::_exit(127);
    ::execve(control.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  in_r = fs::UniqueFd();
  out_w = fs::UniqueFd();
  auto written = fs::write_all(in_w.get(), commands, "the MPS control shell's stdin");
  in_w = fs::UniqueFd();
  auto text = read_answer(out_r.get(), child);
  auto status = wait_child(child);
  if (!status) return std::unexpected(status.error());
  if (!text) return std::unexpected(text.error().wrap(control));
  if (!written || *status != 0)
    return internal_error(text::cat("no MPS control daemon answers in ", mps_pipe_dir(cfg, gpu_uuid), " (", control,
                                    " exited with ", *status, ")"));
  return *text;
}

}  // namespace gpufrac
