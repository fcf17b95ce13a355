// A container's GPU request, parsed from its annotations (or a CDI device name). Annotations are
// untrusted: only gpufrac's own keys (and, when enabled, the compatibility aliases) are read, each
// value is bounded and strictly parsed, and every refusal is one line naming the annotation, the
// quoted value and the accepted form.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/plan/grant.hpp"
#include "core/quantity.hpp"

namespace gpufrac {

using Annotations = std::map<std::string, std::string>;

namespace annotation {
inline constexpr const char* kPrefix = "gpufrac.io/";
inline constexpr const char* kFraction = "gpufrac.io/fraction";
inline constexpr const char* kMemory = "gpufrac.io/memory";
inline constexpr const char* kMigProfile = "gpufrac.io/mig-profile";
inline constexpr const char* kGpu = "gpufrac.io/gpu";
inline constexpr const char* kPolicy = "gpufrac.io/policy";
// How many distinct GPUs the share spans (docs/architecture.md "Requests and allocation"): alone
// that many whole GPUs, with a size that size on each. Not a sizing key.
inline constexpr const char* kGpus = "gpufrac.io/gpus";
// The compute share (docs/architecture.md "Compute share"): a percent of the GPU's time, how it is
// enforced and whose work goes first. Not sizing keys: compute alone is also the memory share.
inline constexpr const char* kCompute = "gpufrac.io/compute";
inline constexpr const char* kComputeMode = "gpufrac.io/compute-mode";
inline constexpr const char* kPriority = "gpufrac.io/priority";
// Burstable memory (docs/architecture.md "Burstable memory", core/request/burst_request.hpp): the
// most a share may use beside what it books, and what an allocation past it does. Not sizing keys.
inline constexpr const char* kMemoryLimit = "gpufrac.io/memory-limit";
inline constexpr const char* kFractionLimit = "gpufrac.io/fraction-limit";
inline constexpr const char* kOnLimit = "gpufrac.io/on-limit";
inline constexpr const char* kOnLimitTimeout = "gpufrac.io/on-limit-timeout";
// Written by gpufrac-runtime on the containers it prepared; accepted and ignored by the parser.
inline constexpr const char* kInjected = "gpufrac.io/injected";
// Compatibility aliases (Config::aliases): KAI-Scheduler / Run:ai and ClearML.
inline constexpr const char* kAliasFraction = "gpu-fraction";
inline constexpr const char* kAliasMemory = "gpu-memory";  // MiB
inline constexpr const char* kAliasClearml = "clearml-injector/fraction";
// KAI-Scheduler's limit forms (a dot, not a dash): the fraction grammar, and MiB.
inline constexpr const char* kAliasFractionLimit = "gpu-fraction.limit";
inline constexpr const char* kAliasMemoryLimit = "gpu-memory.limit";
inline constexpr std::size_t kMaxValueBytes = 256;
// gpufrac.io/gpu may list up to kMaxGpusPerRequest UUIDs (41 bytes each, and the commas).
inline constexpr std::size_t kMaxGpuListBytes = 1024;
}  // namespace annotation

// The most GPUs one request spans: a container's limit file holds at most GPUFRAC_MAX_DEVICES
// devices (include/gpufrac/limits_abi.h).
inline constexpr std::uint32_t kMaxGpusPerRequest = 16;

enum class SizeKind { fraction, memory, mig_profile };

// A GPU pin: an index, or a GPU UUID (GPU-<8-4-4-4-12 hex>, stored lower-case). A CDI MIG device
// also pins its MIG instance: mig_uuid (MIG-<uuid>) with index = the parent GPU; only mig-profile
// requests carry it, and the allocator then takes that instance or none.
struct GpuPin {
  std::optional<std::uint32_t> index;
  std::string uuid;      // set when index is not
  std::string mig_uuid;  // CDI MIG devices only (never parsed from annotations)
  // DRA MIG profile devices only (never parsed): the instance's first memory slice, so a
  // mig-profile request takes or makes an instance at exactly this placement.
  std::optional<std::uint32_t> mig_start;
  std::string describe() const;  // "1", "GPU-..." or "MIG-..."
  bool operator==(const GpuPin&) const = default;
};

// A share's memory limit above its request (gpufrac.io/memory-limit or fraction-limit): of the same
// kind as the request, never below it. The allocator turns it into bytes on the GPU it grants.
struct MemoryLimit {
  bool is_fraction = false;
  Ppm fraction = 0;         // is_fraction
  std::uint64_t bytes = 0;  // !is_fraction
  bool operator==(const MemoryLimit&) const = default;
};

struct Request {
  SizeKind kind = SizeKind::fraction;
  Ppm fraction = 0;  // kind == fraction; kWholeGpuPpm = a whole GPU
  // kind == memory; with mig_profile naming a compute instance smaller than its GPU instance
  // ("1c.3g.40gb"), gpufrac.io/memory beside it: what it books of the GPU instance's memory (0: the
  // equal split, core/mig/mig_fit.hpp).
  std::uint64_t memory_bytes = 0;
  std::string mig_profile;  // kind == mig_profile, canonical name
  std::optional<GpuPin> gpu;
  // gpufrac.io/gpus: the share on that many distinct GPUs (nullopt: one), each GPU's booking its
  // own; sized_by_gpus: it was the only size (whole GPUs). gpu_list: gpufrac.io/gpu naming several
  // GPUs, exactly *gpus of them (gpu is then unset; a single pin is always `gpu`).
  std::optional<std::uint32_t> gpus;
  bool sized_by_gpus = false;
  std::vector<GpuPin> gpu_list;
  std::uint32_t gpu_count() const { return gpus.value_or(1); }
  bool multi_gpu() const { return gpu_count() > 1; }
  std::optional<Policy> policy;  // overrides the node's allocation.policy
  // gpufrac.io/compute in ppm of the GPU's time (percent x 10'000); nullopt: the default share
  // (allocation.compute). sized_by_compute: compute was the only size, so the memory share is the
  // same fraction (kind fraction, fraction = the compute).
  std::optional<std::uint32_t> compute_ppm;
  bool sized_by_compute = false;
  std::optional<ComputeMode> compute_mode;  // nullopt: fair
  std::optional<ComputePriority> priority;  // nullopt: normal
  // The request says something about compute (a share, a mode or a priority). On MIG a share is a
  // size (SMs, core/mig/mig_device.hpp); a mode or a priority keeps the request off MIG (reaches_mig).
  bool compute_intent() const { return compute_ppm || compute_mode || priority; }
  // Burstable memory: the limit above the request (nullopt: the request is the limit), and
  // gpufrac.io/on-limit: wait with its timeout in milliseconds (nullopt: an allocation past the
  // limit, or that finds no room, fails at once).
  std::optional<MemoryLimit> limit;
  std::optional<std::uint32_t> wait_ms;
  // "fraction=0.25", "memory=4Gi gpu=1", "mig-profile=1g.10gb policy=spread",
  // "compute=30 compute-mode=strict priority=high", "gpus=2", "fraction=0.5 gpus=2 gpu=0,2",
  // "memory=10Gi memory-limit=30Gi on-limit=wait on-limit-timeout=5":
  // recorded in the ledger (each GPU of a multi-GPU share carries the whole request).
  std::string describe() const;
  bool operator==(const Request&) const = default;
};

// How messages name a key when the request was not read from annotations: gpufrac.io/fraction ->
// GPUFRAC_FRACTION for a request set in the container's environment (core/request/env_request.hpp).
using KeyNames = std::map<std::string, std::string, std::less<>>;

// nullopt: the annotations carry no gpufrac request (no gpufrac.io/ key other than the injected
// marker, no enabled alias). An error names the annotation (or its name in `names`) and the
// accepted form (exit 1).
Result<std::optional<Request>> parse_request(const Annotations& annotations, bool aliases, const KeyNames& names = {});

// Cheap test for the hook's fast path: true when parse_request could return a request or an
// error (some gpufrac.io/ key other than the marker, or an enabled alias is present).
bool has_gpufrac_request(const Annotations& annotations, bool aliases);
// The first such key (own keys first, then enabled aliases); null when there is none.
const std::string* first_request_key(const Annotations& annotations, bool aliases);

// Value grammars shared with other front-ends; the message names the key and the accepted form.
Result<GpuPin> parse_gpu_pin(std::string_view key, std::string_view value);
Result<Policy> parse_policy(std::string_view key, std::string_view value);
Result<std::uint32_t> parse_compute(std::string_view key, std::string_view value);
Result<ComputeMode> parse_compute_mode(std::string_view key, std::string_view value);
Result<ComputePriority> parse_priority(std::string_view key, std::string_view value);

}  // namespace gpufrac
