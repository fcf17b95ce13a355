// One booking in the ledger and the ledger's whole content. The JSON form is in ledger_json.hpp;
// the file operations in ledger.hpp. Container ids and device keys come from runtimes and users:
// they are validated before they are stored or used in a path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/plan/grant.hpp"

namespace gpufrac {

// Which front-end made the booking. `dra`: gpufrac-dra for a Kubernetes ResourceClaim (k8s/): the
// booking belongs to the claim, not to a container (container_id holds the claim's uid, device_key
// the DRA device and share, claim its namespace/name); only unpreparing the claim releases it.
enum class BookingSource { hook, wrapper, cdi, dra };
const char* to_string(BookingSource s);
std::optional<BookingSource> booking_source_from(std::string_view s);

// A per-cgroup device-memory limit gpufrac has the driver hold for a booking (docs/architecture.md
// "Driver-enforced memory limits"), recorded before it is set, so that release and gc know what to
// clear. Bytes.
struct DriverLimit {
  std::string cgroup;  // the cgroup v2 directory (full path under cgroup-root), the NVML nameSpace
  std::uint64_t soft = 0, hard = 0;
  bool operator==(const DriverLimit&) const = default;
};

struct LedgerEntry {
  std::string container_id;
  std::string device_key;   // tells several devices of one container apart ("" for annotations)
  std::string device_uuid;  // GPU- or MIG-
  std::uint32_t gpu_index = 0;
  std::string gpu_uuid;
  std::optional<MigRef> mig;
  std::uint64_t bytes = 0;
  bool exclusive = false;
  std::string request;  // Request::describe()
  BookingSource source = BookingSource::hook;
  std::int64_t pid = 0;         // host pid; 0 = pending (booked before the container exists)
  std::uint64_t pid_start = 0;  // start time of pid (field 22 of /proc/<pid>/stat), 0 when pending
  std::int64_t created = 0;     // seconds since the epoch
  // Which container instance holds it: one id can name several containers at once (two runtime
  // roots, two containerd namespaces). "p<pid>-<start>" for a booking made with the container's
  // process, "w<hex>" for the runtime wrapper's (booked before the process exists); "" in ledgers
  // written before instances, and for operator bookings (`gpufrac ledger`).
  std::string instance;
  std::string claim;  // dra: "<namespace>/<name>" of the ResourceClaim; "" otherwise
  // The compute share booked with it (Grant::compute_ppm): ppm of the GPU's time, 0 = none (then
  // mode and priority stay fair and normal, and the file holds none of the three).
  std::uint32_t compute_ppm = 0;
  ComputeMode compute_mode = ComputeMode::fair;
  ComputePriority priority = ComputePriority::normal;
  // The driver limit set (or being set) on the booking's GPU for its cgroup; none: the shim alone.
  std::optional<DriverLimit> driver_limit;
  // Burstable memory (Grant::limit_bytes, Grant::wait_ms; version 6): `bytes` is the request, the
  // share may use up to limit_bytes (0: bytes); wait_ms the on-limit: wait timeout (0: fail).
  std::uint64_t limit_bytes = 0;
  std::uint32_t wait_ms = 0;
  std::uint64_t limit() const { return limit_bytes != 0 ? limit_bytes : bytes; }
  bool pending() const { return pid == 0; }
  bool claim_owned() const { return source == BookingSource::dra; }
  bool operator==(const LedgerEntry&) const = default;
};

// The grant an entry stands for (reason says it is an existing booking).
Grant grant_of(const LedgerEntry& e);

// A MIG instance of a dynamic-MIG GPU that has no booking and is kept for reuse: since when
// (seconds since the epoch). Only recorded instances are handed out again without the
// provisioner; one without a record (found idle, or being destroyed) waits for it.
struct MigIdleRecord {
  std::string uuid;      // MIG-<uuid>
  std::string gpu_uuid;  // GPU-<uuid> of the parent
  std::int64_t since = 0;
  bool operator==(const MigIdleRecord&) const = default;
};

// A driver limit whose booking left the ledger (released, reclaimed) before gpufrac cleared it:
// kept until `gpufrac driver-limit clear` (poststop, a refused start) or gc clears it, so that no
// limit is ever forgotten (core/ledger/ledger_limits.hpp).
struct LimitToClear {
  std::string gpu_uuid;
  DriverLimit limit;
  std::string owner;  // the booking's container key (or claim uid), for messages
  std::int64_t since = 0;
  bool operator==(const LimitToClear&) const = default;
};

// A GPU in MPS mode (docs/architecture.md "SM sharing"): SM shares go only there (or on an empty GPU
// that may switch), time shares never. Recorded in the transaction that books the first SM share of
// the GPU, before its MPS daemon starts; removed (by gc or the next provisioner) once the daemon is
// stopped and the compute mode restored. `since`: when the GPU last had no SM share (its creation,
// then each release of its last one); the daemon goes once that is idle-timeout ago.
struct MpsGpuRecord {
  std::string gpu_uuid;  // GPU-<uuid>
  std::int64_t since = 0;
  bool operator==(const MpsGpuRecord&) const = default;
};

// The ledger file's content. Version 1 holds bookings only; version 2 adds the idle records of
// dynamic MIG instances (top-level "mig_idle"); version 3 claim bookings; version 4 compute shares
// (an entry's "compute", "compute_mode", "priority"); version 5 driver limits (an entry's
// "driver_limit" and the top-level "limits_to_clear"); version 6 burstable memory (an entry's "limit"
// and "wait_ms"); version 7 SM shares (compute_mode "sm") and the GPUs in MPS mode (top-level
// "mps"). The writer writes the lowest version that holds the content (docs/architecture.md "The
// ledger and a booking's life").
struct LedgerState {
  std::vector<LedgerEntry> entries;
  std::vector<MigIdleRecord> mig_idle;  // by uuid, at most one record per instance
  // At most one per (GPU, cgroup).
  std::vector<LimitToClear> limits_to_clear;
  // Version 7: the GPUs in MPS mode (top-level "mps"), by GPU uuid, at most one record each.
  std::vector<MpsGpuRecord> mps;
  bool operator==(const LedgerState&) const = default;
};

inline constexpr std::int64_t kMaxPid = 4194304;  // PID_MAX_LIMIT on 64-bit Linux

// [A-Za-z0-9][A-Za-z0-9_.-]{0,127}, not containing "..": safe as a file name.
Result<> validate_container_id(std::string_view id);
// [a-z0-9-]{1,64} starting with a letter: safe in a directory name after "<id>@".
Result<> validate_instance(std::string_view instance);
// The same, with "" (no instance: legacy and operator bookings, or every instance of an id) accepted.
Result<> validate_optional_instance(std::string_view instance);
// The instance of a container known by its process (pid and its start time).
std::string process_instance(std::int64_t pid, std::uint64_t pid_start);
// LedgerEntry::instance of a DRA claim's bookings (gpufrac-dra books them under the claim's uid).
inline constexpr const char* kClaimInstance = "dra";
// The name of a booking's directory under <state-dir>/containers: the id, "@<instance>" when known.
std::string container_key(std::string_view container_id, std::string_view instance);
inline std::string container_key(const LedgerEntry& e) {
  return container_key(e.container_id, e.instance);
}
// A valid container id, optionally followed by "@" and a valid instance.
Result<> validate_container_key(std::string_view key);

// The device key of the k-th GPU (0-based, by index) of a multi-GPU share (gpufrac.io/gpus) booked
// under `base`: "gpus/<k>" for an annotation request (base ""), "<base>/gpus/<k>" otherwise. Every
// GPU of the share is its own entry; the keys tell them apart within the container.
std::string gpus_device_key(std::string_view base, std::size_t k);
// The base key and position of such an entry; nullopt for any other key.
struct GpusKey {
  std::string_view base;
  std::size_t position = 0;
};
std::optional<GpusKey> parse_gpus_device_key(std::string_view key);
// The key a booking was asked under: the base of a multi-GPU share's entry, else the key itself.
std::string_view base_device_key(std::string_view key);

// Printable ASCII without spaces, quotes or backslashes, at most 128 bytes ("" allowed).
Result<> validate_device_key(std::string_view key);
// "<namespace>/<name>" of a ResourceClaim: a DNS label (<= 63) and subdomain (<= 253), [a-z0-9.-].
Result<> validate_claim_name(std::string_view claim);
// A cgroup directory as a driver limit names it: absolute, printable ASCII without quotes or
// backslashes, no empty, "." or ".." component, at most 1024 bytes ("/" alone is the root).
Result<> validate_cgroup_path(std::string_view path);
// A Kubernetes object uid (a claim's or a pod's): lowercase hex digits and '-', at most 64; empty
// is refused. `what` names it in the message ("claim uid", "pod uid").
Result<> validate_kube_uid(std::string_view uid, std::string_view what);

}  // namespace gpufrac
