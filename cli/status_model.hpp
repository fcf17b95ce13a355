// `gpufrac status` as data: per device (GPU, or MIG instance) total, reserved and free memory,
// the GPU's time booked and free, and its shares (and, for dynamic MIG instances kept for reuse, state "idle" and the
// idle age), built purely from the inventory and the ledger, then rendered as JSON here, for people in
// status_render.hpp, and as Prometheus series by metrics_model.hpp. Liveness and live usage come
// in as functions so tests need no processes: a share's used_bytes stays nullopt when no usage
// source knows it (e.g. a pending booking, whose container has no accounting region yet).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/config/config.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac::cli {

struct ShareStatus {
  LedgerEntry entry;
  std::string state;  // "running", "pending", "pending (expired)", "exited", "pid reused"
  std::int64_t age_s = 0;
  std::optional<std::uint64_t> used_bytes;  // live usage (the driver's where it holds the limit); nullopt = not known
  // The share of the GPU's time its work held over the last 10 s, in ppm (the enforcing side's
  // per-GPU arbiter knows it); nullopt = not known ("-" in the text, null in JSON).
  std::optional<std::uint32_t> compute_achieved_ppm;
  // Why its container's usage region cannot be believed (not a regular file of the region's size, or
  // another header: its container truncated, grew or overwrote it); "" when it reads whole or there
  // is none yet. Its usage is then unknown, and the burst reclaimer holds it at its request.
  std::string region_damaged;
  // burst.reclaim: swap: its processes on this GPU are checkpointed (the reclaimer's swap state,
  // reclaim/swap_state.hpp): the bytes moved to host memory, since when, and for whom.
  struct Swapped {
    std::uint64_t bytes = 0;
    std::int64_t since = 0;
    std::string owner;
  };
  std::optional<Swapped> swapped;
  // A multi-GPU share (gpufrac.io/gpus): the indices of all its GPUs, this one's included, by index;
  // empty for any other booking. Each GPU's booking is its own ShareStatus, under its device.
  std::vector<std::uint32_t> gpus;
};

struct DeviceStatus {
  std::uint32_t gpu_index = 0;
  std::string uuid;  // GPU- or MIG-
  std::string name;  // GPU model, or the MIG profile
  std::optional<MigRef> mig;
  bool mig_mode = false;  // a GPU in MIG mode: its memory belongs to its instances
  std::uint64_t total = 0, capacity = 0, reserved = 0, free = 0;
  std::vector<ShareStatus> shares;
  std::optional<std::int64_t> idle_s;  // a dynamic MIG instance kept for reuse: idle for this long
  // The GPU's time (GPUs not in MIG mode): ppm booked by its shares, and what a new share may still
  // book (0 while the GPU is used whole).
  std::uint64_t compute_booked = 0, compute_free = 0;
  // Why the GPU's compute arbiter looks tampered with, one line each (limits/host/arbiter_checks.hpp
  // and the containers' own reports); empty when nothing says so.
  std::vector<std::string> compute_tampered;
  // Whether those lines name the container of key as the one that tampered (its slot's lane, or its
  // lane file: "slot N (<key>)'s ...", "the lane file of "<key>"'s ..."), not as a witness or a victim.
  bool compute_tampering_by(const std::string& key) const;
  // A MIG device (a compute instance): its GPU instance's profile and what the bookings of all its
  // compute instances hold of that GPU instance's memory (total: the GPU instance's memory; free:
  // what is left to this compute instance, 0 once it is booked), its SMs (0: unknown), and whether
  // it is smaller than its GPU instance (which its siblings then share).
  std::string gi_profile;
  std::uint64_t gi_reserved = 0;
  std::uint32_t multiprocessors = 0;
  bool split = false;
  // SM sharing (docs/architecture.md "SM sharing"): the GPU is in MPS mode (compute_booked is then its
  // SM shares' percent of the SMs), idle for sm_idle_s without an SM share, and what its MPS daemon
  // says (filled in by read_node: asking the daemon is I/O; "" until then).
  bool sm_mode = false;
  std::optional<std::int64_t> sm_idle_s;
  // While idle: seconds until compute.mps-idle-timeout stops its daemon (0: at the next provisioning
  // or gc). A time share switches it back at once in any case.
  std::optional<std::int64_t> sm_switch_back_s;
  std::string mps_state;  // "ACTIVE", "FAULT", "idle" (no server), "no daemon", or "unknown: <why>"
  std::int64_t mps_daemon_pid = 0;
  std::optional<std::int64_t> mps_server_pid;
  std::size_t mps_clients = 0;
};

struct StatusReport {
  double overcommit = 1.0;
  std::vector<DeviceStatus> devices;  // GPU, then its MIG instances by (gi, ci)
  std::vector<ShareStatus> unknown;   // bookings on devices the inventory does not list
};

using StateOf = std::function<std::string(const LedgerEntry&)>;
using UsageOf = std::function<std::optional<std::uint64_t>(const LedgerEntry&)>;
// ShareStatus::compute_achieved_ppm of a booking; empty: nothing knows it yet.
using ComputeAchievedOf = std::function<std::optional<std::uint32_t>(const LedgerEntry&)>;

StatusReport build_status(const Inventory& inv, const LedgerState& ledger, const AllocationConfig& cfg,
                          std::int64_t now, const StateOf& state_of, const UsageOf& usage_of = {},
                          const ComputeAchievedOf& achieved_of = {});
nlohmann::json status_json(const StatusReport& report);
// Whether two bookings are GPUs of the same multi-GPU share (same container instance, the same key
// asked for and the same request; ShareStatus::gpus set).
bool same_multi_gpu_share(const ShareStatus& a, const ShareStatus& b);
// "45s", "2m05s", "3h02m", "2d03h"
std::string format_age(std::int64_t seconds);

}  // namespace gpufrac::cli
