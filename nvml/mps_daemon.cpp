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
#include "nvml/mps_dirs.hpp"
#include "nvml/mps_spawn.hpp"

extern char** environ;

namespace gpufrac {

namespace {

constexpr std::chrono::seconds kAnswerTimeout{10};

Result<int> wait_child(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return sys_error("cannot wait for the MPS control shell");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether the process's first argument is the driver's control program (what a daemon gpufrac
// started runs: the -d parent's argv, which its daemon child keeps).
bool runs_mps_control(const Config& cfg, std::int64_t pid) {
  auto cmdline = fs::read_file(text::cat(cfg.proc_root, "/", pid, "/cmdline"), 4096);
  if (!cmdline) return false;
  const std::string argv0 = cmdline->substr(0, cmdline->find('\0'));
  return fs::basename(argv0) == "nvidia-cuda-mps-control";
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
  if (auto r = unmount_mps_dirs(cfg, gpu_uuid); !r) return r;
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

bool kill_mps_daemon(const Config& cfg, const MpsDaemonRecord& r) {
  if (r.pid <= 0) return false;
  fs::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(r.pid), 0)));
  if (!pidfd) return false;
  // The pidfd names one process from now on: the one that has the recorded start time and runs the
  // control program, or none is signalled.
  if (process_liveness(cfg.proc_root, r.pid, r.pid_start) != Liveness::alive || !runs_mps_control(cfg, r.pid))
    return false;
  return ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) == 0;
}

Result<std::string> mps_command(const Config& cfg, const std::string& control, const std::string& gpu_uuid,
                                const std::string& commands) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd out_r(out[0]), out_w(out[1]);
  std::vector<std::string> args = {"nvidia-cuda-mps-control"}, env = mps_daemon_env(cfg, gpu_uuid);
  auto argv = c_strings(args), envp = c_strings(env);
  // The shell's complaints ("Cannot find MPS control daemon process") are not the caller's output:
  // a daemon that does not answer is this function's error.
  fs::UniqueFd null_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!null_fd) return sys_error("cannot open /dev/null");
  const pid_t child = ::fork();
  if (child < 0) return sys_error("cannot fork to run " + control);
  if (child == 0) {
    if (!only_stdio(in_r.get(), out_w.get(), null_fd.get())) ::_exit(127);
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
