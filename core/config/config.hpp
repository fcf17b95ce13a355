// Node configuration: /etc/gpufrac/config.yaml (or --config / GPUFRAC_CONFIG). Every path a program
// touches hangs off this value so tests and the demo run under a temporary root. The documented
// default file is etc/config.yaml; keep the two in step.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/quantity.hpp"

namespace gpufrac {

enum class Policy { binpack, spread };
enum class NvmlBackend { auto_detect, nvml, simulated };
enum class MigMode { static_, dynamic };
enum class LogTarget { file, journal, stderr_ };
enum class DriverInject { auto_detect, always, never };
// allocation.compute: whether a share without gpufrac.io/compute books a compute weight equal to its
// memory share (managed) or none, leaving the GPU's time to its own time-slicing (unmanaged).
enum class ComputeManagement { managed, unmanaged };
// Who enforces a share's memory limit (docs/architecture.md "Driver-enforced memory limits"):
// auto: the driver's per-cgroup limit where the node has it (r615+, cgroup v2, not MIG), and the
// shim always; driver: the same, and a share the driver cannot hold is refused; shim: the shim alone.
enum class Enforcement { auto_detect, driver, shim };
// requests.unknown: what a misspelt request name in a container (a gpufrac.io/ annotation or a
// GPUFRAC_* variable gpufrac does not know, core/request/unknown_keys.hpp) gets: a refusal, or a
// warning and a start without it.
enum class UnknownNames { refuse, warn };

struct NvmlConfig {
  NvmlBackend backend = NvmlBackend::auto_detect;
  std::string machine;  // simulated machine file; absolute after loading
  std::string library = "libnvidia-ml.so.1";
};

// compute.sm-sharing (docs/architecture.md "SM sharing"): which GPUs may be switched to MPS for SM
// shares when no booking is on them. off: none; on_demand: every GPU; listed: the GPUs in `gpus`
// (indices "0" or UUIDs "GPU-...").
enum class SmSharing { off, on_demand, listed };
struct SmSharingConfig {
  SmSharing mode = SmSharing::on_demand;
  std::vector<std::string> gpus;  // listed only
  // compute.mps-idle-timeout: seconds a GPU's MPS daemon is kept once its last SM share is gone.
  std::uint32_t idle_timeout_s = 600;
  bool may_switch(std::uint32_t index, const std::string& uuid) const;
};

struct AllocationConfig {
  Policy policy = Policy::binpack;
  double overcommit = 1.0;                // memory promised per GPU may reach total * overcommit
  std::uint32_t max_shares_per_gpu = 16;  // 0 = unlimited
  bool mig_serves_fractions = false;      // fraction/memory requests may take an idle MIG instance
  std::uint32_t pending_timeout_s = 120;  // a booking with no container pid yet is reclaimed after this
  ComputeManagement compute = ComputeManagement::managed;  // the default compute share of a share
  SmSharingConfig sm_sharing;  // from the config's compute: section (SM shares on GPUs in MPS mode)
};

struct MigConfig {
  MigMode mode = MigMode::static_;      // default for every GPU
  std::map<std::string, MigMode> gpus;  // per GPU by index ("0") or UUID
  std::uint32_t idle_timeout_s = 600;   // idle dynamic instances older than this are destroyed
  MigMode mode_for(std::uint32_t index, const std::string& uuid) const;
};

struct LogConfig {
  LogTarget target = LogTarget::file;
  std::string file = "/var/log/gpufrac/gpufrac.log";
  std::string level = "info";  // debug, info, warn, error
};

struct RequestsConfig {
  UnknownNames unknown = UnknownNames::refuse;
};

struct CdiConfig {
  std::string output = "/var/run/cdi/gpufrac.yaml";
  std::vector<std::string> spec_dirs = {"/etc/cdi", "/var/run/cdi"};
  std::vector<Ppm> fractions = {125000, 250000, 375000, 500000, 625000, 750000, 875000};
  std::vector<std::uint64_t> memory_shares;  // bytes; optional memory-sized share devices
  std::vector<std::uint32_t> sm_shares;      // percents; optional SM-share devices <gpu>-sm<percent>
};

// Burstable memory (docs/architecture.md "Burstable memory"): what happens when a share within its
// request needs memory a borrower holds. kill (default): the reclaimer stops the process of the
// borrower furthest over its request; refuse: borrowers keep it, and the owner's allocation fails;
// swap: the reclaimer checkpoints the borrower's processes on the GPU through the CUDA driver's
// checkpoint API (their memory moves to host memory, they pause) and restores them once the GPU has
// room again, falling back to kill, with the reason, where swap cannot be used (docs/architecture.md
// "Swap").
enum class BurstReclaim { kill, refuse, swap };
struct BurstConfig {
  BurstReclaim reclaim = BurstReclaim::kill;
  // What the driver may count per process beyond what the shim counts (a CUDA context takes a few
  // hundred MiB the shim never sees): a share is past its request by the driver's view only beyond
  // this much per process, so a container the shim holds within its request is never a borrower.
  std::uint64_t context_allowance = 512ull << 20;
  // The CUDA driver library the reclaimer loads for swap (a bare name goes through the loader's
  // search path).
  std::string cuda_library = "libcuda.so.1";
};

// Swap (docs/architecture.md "Swap"): the node-wide budget of host memory that swapped-out GPU
// memory may take (bytes; 0: none but each container's memory cgroup).
struct SwapConfig {
  std::uint64_t host_memory = 0;
};

// The driver's user space in containers (docs/architecture.md "The driver's user space").
struct DriverConfig {
  // auto: inject unless the container already carries NVIDIA's edits; always; never.
  DriverInject inject = DriverInject::auto_detect;
  std::string root = "/";  // where the driver's files live, under host-root (driver containers: /run/nvidia/driver)
};

struct Config {
  std::string source = "<built-in defaults>";  // the file this came from
  std::string state_dir = "/run/gpufrac";
  std::string host_root = "/";      // prefixes /dev, /proc/driver/nvidia*, /proc/devices
  std::string proc_root = "/proc";  // live processes (pids, namespaces); tests keep the real one
  std::string cgroup_root = "/sys/fs/cgroup";
  NvmlConfig nvml;
  AllocationConfig allocation;
  bool aliases = true;  // gpu-fraction, gpu-memory, clearml-injector/fraction
  bool require_host_pid = true;
  RequestsConfig requests;
  // Seconds a front-end waits for the ledger lock before it gives up with one line naming the holder.
  std::uint64_t lock_timeout_s = 10;
  MigConfig mig;
  Enforcement enforcement = Enforcement::auto_detect;
  std::string shim_path;  // host path of libgpufrac-limits.so
  std::string hook_path;  // host path of gpufrac-hook (written into specs)
  std::string cli_path;   // host path of gpufrac (helpers the hook execs)
  std::vector<std::string> runtimes = {"runc", "crun"};
  LogConfig log;
  CdiConfig cdi;
  DriverConfig driver;
  BurstConfig burst;
  SwapConfig swap;

  // Derived state paths.
  std::string ledger_path() const { return state_dir + "/ledger.json"; }
  std::string ledger_lock_path() const { return state_dir + "/ledger.lock"; }
  std::string inventory_cache_path() const { return state_dir + "/inventory.json"; }
  // One container instance's directory: <state-dir>/containers/<key> (container_key in ledger_entry.hpp).
  std::string container_dir(const std::string& key) const { return state_dir + "/containers/" + key; }
  // A host path read for discovery, under host-root.
  std::string host_path(const std::string& absolute) const;
};

inline constexpr const char* kDefaultConfigPath = build::kConfigPath;  // /etc/gpufrac/config.yaml for /usr
inline constexpr const char* kConfigEnv = "GPUFRAC_CONFIG";

// Built-in defaults (installed paths come from the build).
Config default_config();
// Loads a config file strictly: unknown keys and bad values are one-line errors with file:line.
Result<Config> load_config_file(const std::string& path);
Result<Config> load_config_string(const std::string& yaml, const std::string& name);
// Selection order: explicit path (flag) > $GPUFRAC_CONFIG > /etc/gpufrac/config.yaml > defaults.
// An explicitly named file must exist; a missing default file means built-in defaults.
Result<Config> select_config(const std::string& flag_path);

const char* to_string(Policy p);
const char* to_string(MigMode m);
const char* to_string(DriverInject d);
const char* to_string(ComputeManagement c);
const char* to_string(Enforcement e);
const char* to_string(BurstReclaim r);
const char* to_string(UnknownNames u);
const char* to_string(SmSharing s);

}  // namespace gpufrac
