#include "metrics/counter_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <utility>

#include "core/fs.hpp"
#include "core/shared_map.hpp"

namespace gpufrac::metrics {

namespace {

constexpr std::size_t kSize = sizeof(CounterLayout);

using Mapping = fs::SharedMapping;

Result<std::size_t> regular_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat " + path);
  if (!S_ISREG(st.st_mode)) return internal_error(path + ": not a regular file");
  return static_cast<std::size_t>(st.st_size);
}

Result<> check_size(std::size_t size, const std::string& path) {
  if (size == kSize) return {};
  return internal_error(path + ": " + std::to_string(size) + " bytes; accepted: " + std::to_string(kSize) +
                        " (counter layout v1); it was written by another gpufrac version");
}

Result<> check_magic(std::uint64_t magic, const std::string& path) {
  if (magic == 0 || magic == kCounterMagic) return {};
  return internal_error(path + ": not a gpufrac counter file (bad magic)");
}

// Never with a hole (core/shared_map.hpp): a fresh file's page is allocated before the first add;
// on a full state directory that fails with ENOSPC instead of a SIGBUS in the hook.
Result<Mapping> map(int fd, bool writable, const std::string& path) {
  return fs::map_allocated(fd, kSize, writable, path);
}

// Whether the file has no storage at all: every byte reads as zero, nothing to map.
Result<bool> unallocated(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat " + path);
  return st.st_blocks == 0;
}

void add(std::uint64_t* cell, std::uint64_t v) {
  __atomic_fetch_add(cell, v, __ATOMIC_RELAXED);
}
std::uint64_t load(const std::uint64_t* cell) {
  return __atomic_load_n(cell, __ATOMIC_RELAXED);
}

}  // namespace

const char* to_string(Frontend f) {
  return f == Frontend::hook ? "hook" : "wrapper";
}

const char* to_string(Refusal r) {
  switch (r) {
    case Refusal::capacity:
      return "capacity";
    case Refusal::malformed:
      return "malformed";
    case Refusal::host_pid:
      return "host_pid";
    case Refusal::other:
      break;
  }
  return "other";
}

std::string counter_file_path(const std::string& state_dir) {
  return state_dir + "/" + kCounterFileName;
}

std::size_t bucket_of(std::uint64_t duration_ns) {
  for (std::size_t i = 0; i < kLatencyBucketCount; ++i)
    if (static_cast<double>(duration_ns) <= kLatencyBuckets[i] * 1e9) return i;
  return kLatencyBucketCount;
}

Result<> record(const std::string& state_dir, const Observation& o) {
  const std::string path = counter_file_path(state_dir);
  fs::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) return sys_error("cannot open " + path);
  auto size = regular_size(fd.get(), path);
  if (!size) return std::unexpected(size.error());
  if (*size == 0) {
    if (::ftruncate(fd.get(), kSize) != 0) return sys_error("cannot size " + path);
    if (::fchmod(fd.get(), 0644) != 0) return sys_error("cannot chmod " + path);
  } else if (auto r = check_size(*size, path); !r) {
    return r;
  }
  auto m = map(fd.get(), true, path);
  if (!m) return std::unexpected(m.error());
  auto* c = m->as<CounterLayout>();
  std::uint64_t expected = 0;
  __atomic_compare_exchange_n(&c->magic, &expected, kCounterMagic, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  if (auto r = check_magic(load(&c->magic), path); !r) return r;
  HistogramCells& h = c->latency[static_cast<std::size_t>(o.timer)];
  add(&h.buckets[bucket_of(o.duration_ns)], 1);
  add(&h.sum_ns, o.duration_ns);
  if (o.refused) {
    const auto frontend =
        static_cast<std::size_t>(o.timer == Timer::wrapper_create ? Frontend::wrapper : Frontend::hook);
    add(&c->refusals[frontend][static_cast<std::size_t>(o.reason)], 1);
  }
  return {};
}

std::uint64_t Histogram::count() const {
  std::uint64_t n = 0;
  for (auto b : buckets) n += b;
  return n;
}

Result<CounterSnapshot> read_counters(const std::string& state_dir) {
  const std::string path = counter_file_path(state_dir);
  CounterSnapshot out;
  fs::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd && errno == ENOENT) return out;
  if (!fd) return sys_error("cannot open " + path);
  auto size = regular_size(fd.get(), path);
  if (!size) return std::unexpected(size.error());
  if (*size == 0) return out;  // a writer is creating it
  if (auto r = check_size(*size, path); !r) return std::unexpected(r.error());
  auto empty = unallocated(fd.get(), path);
  if (!empty) return std::unexpected(empty.error());
  if (*empty) return out;  // a writer could not allocate it (a full state directory): all zeros
  auto m = map(fd.get(), false, path);
  if (!m) return std::unexpected(m.error());
  const auto* c = m->as<const CounterLayout>();
  if (auto r = check_magic(load(&c->magic), path); !r) return std::unexpected(r.error());
  for (std::size_t f = 0; f < kFrontendCount; ++f)
    for (std::size_t r = 0; r < kRefusalCount; ++r) out.refusals[f][r] = load(&c->refusals[f][r]);
  for (std::size_t t = 0; t < kTimerCount; ++t) {
    for (std::size_t b = 0; b <= kLatencyBucketCount; ++b) out.latency[t].buckets[b] = load(&c->latency[t].buckets[b]);
    out.latency[t].sum_ns = load(&c->latency[t].sum_ns);
  }
  return out;
}

std::uint64_t monotonic_ns() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace gpufrac::metrics
