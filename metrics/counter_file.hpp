// The counters gpufrac-hook and gpufrac-runtime keep for `gpufrac metrics`: refusals by reason and
// latency histograms, in one small fixed-layout file, <state-dir>/metrics-counters.v1, that every
// invocation maps and updates with atomic adds. No lock, no server, no daemon: a process killed at
// any instant leaves every counter it did not reach untouched and the rest counted.
//
// Layout (native byte order, every field a std::uint64_t, 8-byte aligned; CounterLayout below):
//   magic                       kCounterMagic ("GFCOUNT" + version byte 1); 0 in a fresh file
//   refusals[frontend][reason]  frontend: hook, wrapper; reason: capacity, malformed, host_pid, other
//   latency[timer]              timer: hook prestart, hook createRuntime, hook poststop, wrapper create;
//     buckets[kLatencyBucketCount + 1]  observations per bucket, NOT cumulative: bucket i counts
//                                       kLatencyBuckets[i-1] < d <= kLatencyBuckets[i]; the last
//                                       one counts d > kLatencyBuckets.back()
//     sum_ns                            the durations' sum in nanoseconds
// A writer opens the file (O_CREAT, O_NOFOLLOW, mode 0644), extends a shorter file to the layout's
// size with ftruncate (zeros; concurrent creators agree on the size), allocates that hole before it
// maps the file (a full state directory is an error, never a SIGBUS: core/shared_map.hpp), sets magic
// from 0 with a compare-and-swap, then adds. A file with no storage at all reads as zeros. A reader takes the count as
// the buckets' sum, so a reader racing a writer never sees +Inf disagree with _count. A file of another size or magic
// is left alone: the writer skips it, the reader reports it. A new layout gets a new file name (".v2").
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace gpufrac::metrics {

enum class Frontend : std::uint8_t { hook, wrapper };
inline constexpr std::size_t kFrontendCount = 2;
// Why a container start was refused. capacity: the ledger had no room (or no device the request
// may use); malformed: the request (annotations, CDI device name) or the OCI input was refused;
// host_pid: the container has its own PID namespace; other: any other failure.
enum class Refusal : std::uint8_t { capacity, malformed, host_pid, other };
inline constexpr std::size_t kRefusalCount = 4;
enum class Timer : std::uint8_t { hook_prestart, hook_create_runtime, hook_poststop, wrapper_create };
inline constexpr std::size_t kTimerCount = 4;

// Upper bounds in seconds (Prometheus' le), ascending.
inline constexpr std::array<double, 12> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1,   0.25,   0.5,   1,    2.5,   5};
inline constexpr std::size_t kLatencyBucketCount = kLatencyBuckets.size();

inline constexpr std::uint64_t kCounterMagic = 0x01544e554f434647ULL;  // "GFCOUNT\x01" little-endian
inline constexpr const char* kCounterFileName = "metrics-counters.v1";

struct HistogramCells {
  std::uint64_t buckets[kLatencyBucketCount + 1];
  std::uint64_t sum_ns;
};

struct CounterLayout {
  std::uint64_t magic;
  std::uint64_t refusals[kFrontendCount][kRefusalCount];
  HistogramCells latency[kTimerCount];
};
static_assert(sizeof(CounterLayout) == 8 + 8 * kFrontendCount * kRefusalCount + kTimerCount * 8 * 14);

const char* to_string(Frontend f);
const char* to_string(Refusal r);

// One front-end invocation: how long it took and, when it refused the container, why.
struct Observation {
  Timer timer = Timer::hook_create_runtime;
  std::uint64_t duration_ns = 0;
  bool refused = false;
  Refusal reason = Refusal::other;
};

std::string counter_file_path(const std::string& state_dir);
// The bucket index a duration falls in (kLatencyBucketCount = above every bound).
std::size_t bucket_of(std::uint64_t duration_ns);
// Adds one observation to <state-dir>/metrics-counters.v1, creating it when missing.
Result<> record(const std::string& state_dir, const Observation& o);

// What a reader sees: the counters at one moment (each cell read atomically).
struct Histogram {
  std::array<std::uint64_t, kLatencyBucketCount + 1> buckets{};  // per bucket, not cumulative
  std::uint64_t sum_ns = 0;
  std::uint64_t count() const;
};
struct CounterSnapshot {
  std::array<std::array<std::uint64_t, kRefusalCount>, kFrontendCount> refusals{};
  std::array<Histogram, kTimerCount> latency{};
  bool operator==(const CounterSnapshot&) const = default;
};
inline bool operator==(const Histogram& a, const Histogram& b) {
  return a.buckets == b.buckets && a.sum_ns == b.sum_ns;
}

// Reads the counters without writing anything; a missing or fresh file reads as all zero.
Result<CounterSnapshot> read_counters(const std::string& state_dir);

// CLOCK_MONOTONIC in nanoseconds, for the durations.
std::uint64_t monotonic_ns();

}  // namespace gpufrac::metrics
