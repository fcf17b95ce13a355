// When a GPU's MPS daemon runs (docs/architecture.md "SM sharing"): started for the GPU's SM shares,
// stopped with the GPU's compute mode restored once its last SM share has been gone for
// compute.mps-idle-timeout, by gc or the next provisioning. Every step holds the GPU's MPS lock
// (nvml/mps_daemon.hpp) and is written down in the daemon's record before it is taken, so a process
// killed at any point (GPUFRAC_FAULT=mps-after-record, mps-after-mode, mps-after-start,
// mps-stop-after-quit, mps-stop-after-mode) leaves what the next holder of the lock finishes: a
// stale record's daemon is told to quit through its pipe directory (its pid is signalled only with
// the start time recorded), and the compute mode is set back to the one recorded before it changed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger.hpp"

namespace gpufrac {

// What the daemon of a GPU says about its server.
struct MpsServerStatus {
  bool daemon = false;  // a daemon answers (record running, its pid alive)
  std::int64_t daemon_pid = 0;
  std::optional<std::int64_t> server;  // the server's pid, when one runs
  bool fault = false;                  // the server is in FAULT
  std::vector<std::int64_t> clients;
};
const char* mps_state_text(const MpsServerStatus& s);  // "no daemon", "idle", "ACTIVE", "FAULT"

// Asks the GPU's daemon (no lock: read only).
Result<MpsServerStatus> mps_server_status(const Config& cfg, const Inventory& inv, const std::string& gpu_uuid);

// Makes sure the GPU's daemon runs, with the GPU in EXCLUSIVE_PROCESS mode: starts it when there is
// none (recovering what a killed start or stop left), restarts it when its server is in FAULT with no
// client left. A server in FAULT with clients refuses (one line: new clients would get
// CUDA_ERROR_MPS_SERVER_NOT_READY until they exit). Returns notes on what it did.
Result<std::vector<std::string>> ensure_mps_daemon(const Config& cfg, const Inventory& inv,
                                                   const std::string& gpu_uuid);

// Stops the GPU's daemon (quit, then SIGKILL of its recorded pid after 5 s), restores the compute
// mode recorded before it was changed, removes the record and the daemon's directories. Nothing to
// do without a record. Call holding the GPU's MPS lock (MpsGpuLock). Returns notes.
Result<std::vector<std::string>> stop_mps_daemon(const Config& cfg, const Inventory& inv, const std::string& gpu_uuid);

// gc and the provisioner: each GPU in MPS mode (ledger record or daemon record) without an SM share
// whose idle time reached compute.mps-idle-timeout (or with no ledger record at all) has its daemon
// stopped and then its ledger record dropped (unless an SM share arrived meanwhile). `except`: a
// GPU left alone. Returns what happened per GPU ("stopped the MPS daemon of GPU 0 (idle 612 s)",
// "kept ... (idle 12 s of 600 s)").
struct MpsReclaim {
  std::vector<std::string> stopped, kept, notes;
};
Result<MpsReclaim> reclaim_idle_mps(const Config& cfg, const Inventory& inv, Ledger& ledger,
                                    const std::string& except = "");

// A time share that arrives while a GPU sits idle in MPS mode (no SM share left, whatever its idle
// time): the GPU's daemon stopped, its compute mode restored and its ledger record dropped at once,
// unless an SM share came meanwhile. The idle timeout only keeps a daemon warm for the next SM share.
Result<MpsReclaim> switch_back_idle_gpu(const Config& cfg, const Inventory& inv, Ledger& ledger,
                                        const std::string& gpu);
// The GPUs in MPS mode without an SM share, by uuid, lowest index first.
std::vector<std::string> idle_mps_gpus(const Inventory& inv, const LedgerState& state);

}  // namespace gpufrac
