#include "nvml/mps_keeper.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <thread>

#include "core/fault.hpp"
#include "core/ledger/ledger_mps.hpp"
#include "core/process.hpp"
#include "core/text.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/mps_daemon.hpp"
#include "nvml/nvml_library.hpp"

namespace gpufrac {

namespace {

std::int64_t now_s() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

// The GPUs' compute modes through NVML (the simulated machine backend cannot change them).
class ComputeModes {
 public:
  static Result<std::unique_ptr<ComputeModes>> open(const Config& cfg) {
    if (uses_simulated_machine(cfg))
      return user_error(
          "SM sharing needs the NVML backend to set the GPU's compute mode (a simulated machine file cannot "
          "change); set nvml: {backend: nvml} (tests use the fake libnvidia-ml.so.1) or compute.sm-sharing: off");
    auto lib = nvml::Library::open(cfg.nvml.library);
    if (!lib) return std::unexpected(lib.error());
    if (!lib->fn().nvmlDeviceGetComputeMode || !lib->fn().nvmlDeviceSetComputeMode ||
        !lib->fn().nvmlDeviceGetHandleByUUID)
      return user_error(cfg.nvml.library + " cannot set a GPU's compute mode, which SM sharing needs (MPS)");
    if (auto r = lib->init(); !r) return std::unexpected(r.error());
    auto out = std::unique_ptr<ComputeModes>(new ComputeModes());
    out->lib_ = std::make_unique<nvml::Library>(std::move(*lib));
    return out;
  }
  ~ComputeModes() {
    if (lib_) lib_->fn().nvmlShutdown();
  }
  Result<unsigned> get(const std::string& uuid) const {
    auto dev = handle(uuid);
    if (!dev) return std::unexpected(dev.error());
    nvmlComputeMode_t mode = 0;
    if (auto r = lib_->check(lib_->fn().nvmlDeviceGetComputeMode(*dev, &mode), "nvmlDeviceGetComputeMode"); !r)
      return std::unexpected(r.error().wrap(uuid));
    return mode;
  }
  Result<> set(const std::string& uuid, unsigned mode) const {
    auto dev = handle(uuid);
    if (!dev) return std::unexpected(dev.error());
    if (auto r = lib_->check(lib_->fn().nvmlDeviceSetComputeMode(*dev, mode), "nvmlDeviceSetComputeMode"); !r)
      return std::unexpected(r.error().wrap(text::cat("setting the compute mode of ", uuid, " to ", mode)));
    return {};
  }

 private:
  ComputeModes() = default;
  Result<nvmlDevice_t> handle(const std::string& uuid) const {
    nvmlDevice_t dev = nullptr;
    if (auto r = lib_->check(lib_->fn().nvmlDeviceGetHandleByUUID(uuid.c_str(), &dev), "nvmlDeviceGetHandleByUUID"); !r)
      return std::unexpected(r.error());
    return dev;
  }
  std::unique_ptr<nvml::Library> lib_;
};

bool daemon_alive(const Config& cfg, const MpsDaemonRecord& r) {
  return r.pid > 0 && process_liveness(cfg.proc_root, r.pid, r.pid_start) == Liveness::alive;
}

// Lines of integers (the control shell's lists).
std::vector<std::int64_t> pids_of(const std::string& text) {
  std::vector<std::int64_t> out;
  for (const auto& line : text::split(text, '\n'))
    if (auto v = text::parse_u64(line); v && *v > 0 && *v <= static_cast<std::uint64_t>(kMaxPid))
      out.push_back(static_cast<std::int64_t>(*v));
  return out;
}

Result<MpsServerStatus> query(const Config& cfg, const std::string& control, const MpsDaemonRecord& r) {
  MpsServerStatus s;
  s.daemon = true;
  s.daemon_pid = r.pid;
  auto servers = mps_command(cfg, control, r.gpu_uuid, "get_server_list\n");
  if (!servers) return std::unexpected(servers.error());
  auto pids = pids_of(*servers);
  if (pids.empty()) return s;
  s.server = pids.front();
  auto status = mps_command(cfg, control, r.gpu_uuid,
                            text::cat("get_server_status ", *s.server, "\nget_client_list ", *s.server, "\n"));
  if (!status) return std::unexpected(status.error());
  s.fault = status->starts_with("FAULT");
  s.clients = pids_of(status->substr(std::min(status->size(), status->find('\n') + 1)));
  return s;
}

// A daemon that may still run for this record: told to quit through its pipe directory (only it
// listens there), waited for, and killed by pid only when the pid still has the recorded start time.
std::vector<std::string> end_daemon(const Config& cfg, const std::string& control, const MpsDaemonRecord& r) {
  std::vector<std::string> notes;
  (void)mps_command(cfg, control, r.gpu_uuid, "quit\n");  // no daemon answering is fine: it is gone
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (daemon_alive(cfg, r) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (daemon_alive(cfg, r) && kill_mps_daemon(cfg, r))
    notes.push_back(text::cat("the MPS control daemon ", r.pid, " of ", r.gpu_uuid, " did not quit: killed"));
  return notes;
}

Result<std::vector<std::string>> start_daemon(const Config& cfg, const std::string& control,
                                              const std::string& gpu_uuid, const std::optional<MpsDaemonRecord>& old) {
  auto modes = ComputeModes::open(cfg);
  if (!modes) return std::unexpected(modes.error());
  std::vector<std::string> notes;
  MpsDaemonRecord r{gpu_uuid, MpsDaemonState::starting, 0, 0, 0, now_s()};
  if (old) {  // a killed start or stop, or a daemon that died: what it left goes first
    notes = end_daemon(cfg, control, *old);
    notes.push_back(text::cat("recovered the MPS daemon record of ", gpu_uuid, " (", to_string(old->state), ")"));
    r.prior_compute_mode = old->prior_compute_mode;
  } else {
    auto mode = (*modes)->get(gpu_uuid);
    if (!mode) return std::unexpected(mode.error());
    r.prior_compute_mode = *mode;
  }
  if (auto w = write_mps_record(cfg, r); !w) return std::unexpected(w.error());
  fault::point("mps-after-record");
  if (auto s = (*modes)->set(gpu_uuid, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS); !s) return std::unexpected(s.error());
  fault::point("mps-after-mode");
  auto spawned = spawn_mps_daemon(cfg, control, gpu_uuid);
  if (!spawned) return std::unexpected(spawned.error());
  fault::point("mps-after-start");
  r.state = MpsDaemonState::running;
  r.pid = spawned->pid;
  r.pid_start = spawned->start_time;
  if (auto w = write_mps_record(cfg, r); !w) return std::unexpected(w.error());
  notes.push_back(text::cat("started the MPS control daemon ", r.pid, " of ", gpu_uuid, " (compute mode ",
                            r.prior_compute_mode, " -> EXCLUSIVE_PROCESS)"));
  return notes;
}

// Why a running daemon is replaced.
std::string restart_note(const Result<MpsServerStatus>& status, const std::string& gpu_uuid) {
  if (status)
    return text::cat("the MPS server ", status->server.value_or(0), " of ", gpu_uuid,
                     " stayed in FAULT with no client left: a fresh daemon");
  return text::cat("the MPS daemon of ", gpu_uuid, " did not answer (", status.error().message, "): a fresh daemon");
}

}  // namespace

const char* mps_state_text(const MpsServerStatus& s) {
  if (!s.daemon) return "no daemon";
  if (!s.server) return "idle";
  return s.fault ? "FAULT" : "ACTIVE";
}

Result<MpsServerStatus> mps_server_status(const Config& cfg, const Inventory& inv, const std::string& gpu_uuid) {
  auto record = read_mps_record(cfg, gpu_uuid);
  if (!record) return std::unexpected(record.error());
  if (!*record || (*record)->state != MpsDaemonState::running || !daemon_alive(cfg, **record)) return MpsServerStatus{};
  auto control = mps_control_path(inv);
  if (!control) return std::unexpected(control.error());
  return query(cfg, *control, **record);
}

Result<std::vector<std::string>> ensure_mps_daemon(const Config& cfg, const Inventory& inv,
                                                   const std::string& gpu_uuid) {
  auto control = mps_control_path(inv);
  if (!control) return std::unexpected(control.error());
  auto lock = MpsGpuLock::acquire(cfg, gpu_uuid);
  if (!lock) return std::unexpected(lock.error());
  auto record = read_mps_record(cfg, gpu_uuid);
  if (!record) return std::unexpected(record.error());
  if (*record && (*record)->state == MpsDaemonState::running && daemon_alive(cfg, **record)) {
    auto status = query(cfg, *control, **record);
    if (status && !status->fault) return std::vector<std::string>{};
    if (status && !status->clients.empty())
      return user_error(text::cat("the MPS server ", *status->server, " of ", gpu_uuid, " is in FAULT until its ",
                                  status->clients.size(),
                                  status->clients.size() == 1 ? " client exits" : " clients exit",
                                  " (a fatal GPU fault of one client ends every client's work); try again then"));
    // In FAULT with no client left, or not answering: a fresh daemon.
    auto started = start_daemon(cfg, *control, gpu_uuid, *record);
    if (started) started->insert(started->begin(), restart_note(status, gpu_uuid));
    return started;
  }
  return start_daemon(cfg, *control, gpu_uuid, *record);
}

Result<std::vector<std::string>> stop_mps_daemon(const Config& cfg, const Inventory& inv, const std::string& gpu_uuid) {
  auto control = mps_control_path(inv);
  if (!control) return std::unexpected(control.error());
  auto record = read_mps_record(cfg, gpu_uuid);
  if (!record) return std::unexpected(record.error());
  if (!*record) return std::vector<std::string>{};
  MpsDaemonRecord r = **record;
  r.state = MpsDaemonState::stopping;
  if (auto w = write_mps_record(cfg, r); !w) return std::unexpected(w.error());
  auto notes = end_daemon(cfg, *control, r);
  fault::point("mps-stop-after-quit");
  auto modes = ComputeModes::open(cfg);
  if (!modes) return std::unexpected(modes.error());
  if (auto s = (*modes)->set(gpu_uuid, r.prior_compute_mode); !s) return std::unexpected(s.error());
  fault::point("mps-stop-after-mode");
  if (auto rm = remove_mps_files(cfg, gpu_uuid); !rm) return std::unexpected(rm.error());
  notes.push_back(
      text::cat("stopped the MPS control daemon of ", gpu_uuid, " (compute mode back to ", r.prior_compute_mode, ")"));
  return notes;
}

}  // namespace gpufrac
