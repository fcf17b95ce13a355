// Per-cgroup device-memory limits (r615), with the driver's rules (fake_memory_limits.hpp): a driver
// before 615 answers NVML_ERROR_FUNCTION_NOT_FOUND (the one library stands for every simulated
// driver; a real older library lacks the symbols, as the partial build does), a MIG device handle
// NOT_SUPPORTED, a caller that is not root NO_PERMISSION (set only), soft above hard or either
// above the GPU's memory INVALID_ARGUMENT, a nameSpace that is not a cgroup directory under the
// cgroup root OPERATING_SYSTEM, a get where no limit is set NOT_FOUND. Soft 0 with hard
// NVML_DEVICE_MEMORY_LIMIT_MAX clears the limit. GPUFRAC_FAKE_NVML_FAIL=<name>[:<code>] fails either.
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "fake_entry.hpp"
#include "fake_memory_limits.hpp"

using namespace gpufrac::fake_nvml;

namespace {

// The checks both calls share; NVML_SUCCESS to go on.
nvmlReturn_t common_checks(const State& s, const nvmlDevice_st& d, const char* name_space, const char* function) {
  if (gpufrac::driver_major(s.driver_version) < gpufrac::kMemoryLimitsDriverMajor) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (nvmlReturn_t code = injected_code(function); code != NVML_SUCCESS) return code;
  if (!name_space) return NVML_ERROR_INVALID_ARGUMENT;
  return d.mig ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

bool clears(const nvmlSetMemoryLimits_v1_t& l) {
  return l.softLimit == 0 && l.hardLimit == NVML_DEVICE_MEMORY_LIMIT_MAX;
}

nvmlReturn_t bounds(const nvmlSetMemoryLimits_v1_t& l, std::uint64_t total) {
  if (clears(l)) return NVML_SUCCESS;
  const bool hard_ok = l.hardLimit == NVML_DEVICE_MEMORY_LIMIT_MAX || l.hardLimit <= total;
  return l.softLimit <= l.hardLimit && l.softLimit <= total && hard_ok ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

// With a state file, every set (a clear included) is appended to "<file>.calls" as
// "set <uuid> <cgroup> <soft> <hard>", so tests can tell the order of the calls (soft zeroed first).
void record_call(const State& s, const PhysicalGpu& gpu, const std::string& cgroup, const nvmlSetMemoryLimits_v1_t& l) {
  if (s.state_file.empty()) return;
  if (std::FILE* f = std::fopen((s.state_file + ".calls").c_str(), "ae")) {
    std::fprintf(f, "set %s %s %llu %llu\n", gpu.model.uuid.c_str(), cgroup.c_str(), l.softLimit, l.hardLimit);
    std::fclose(f);
  }
}

nvmlReturn_t set_limit(State& s, const PhysicalGpu& gpu, const std::string& cgroup, const nvmlSetMemoryLimits_v1_t& l) {
  record_call(s, gpu, cgroup, l);
  auto limits = load_memory_limits(s);
  if (!limits) return file_failure(limits.error());
  auto same = [&](const MemoryLimit& m) { return m.gpu_uuid == gpu.model.uuid && m.cgroup == cgroup; };
  std::erase_if(*limits, same);
  if (!clears(l)) limits->push_back(MemoryLimit{gpu.model.uuid, cgroup, l.softLimit, l.hardLimit});
  if (auto r = save_memory_limits(s, *limits); !r) return file_failure(r.error());
  return NVML_SUCCESS;
}

}  // namespace

// Everything before the change: NVML_SUCCESS to make it, with the cgroup named.
static nvmlReturn_t set_checks(State& s, nvmlDevice_t device, const nvmlSetMemoryLimits_v1_t* limits,
                               std::string& cgroup) {
  nvmlDevice_st* d = find_device(s, device);
  if (!d || !limits) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = common_checks(s, *d, limits->nameSpace, "nvmlDeviceSetMemoryLimits_v1"); rc != NVML_SUCCESS)
    return rc;
  if (::geteuid() != 0) return NVML_ERROR_NO_PERMISSION;
  if (nvmlReturn_t rc = bounds(*limits, d->gpu->model.memory_bytes); rc != NVML_SUCCESS) return rc;
  auto found = cgroup_of_namespace(limits->nameSpace);
  if (!found) return NVML_ERROR_OPERATING_SYSTEM;
  cgroup = *found;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMemoryLimits_v1(nvmlDevice_t device, nvmlSetMemoryLimits_v1_t* limits) {
  std::string cgroup;
  if (::geteuid() != 0)  // refused before the state file (root's) would be locked
    return with_state([&](State& s) { return set_checks(s, device, limits, cgroup); });
  return with_state_change([&](State& s) -> nvmlReturn_t {
    if (nvmlReturn_t rc = set_checks(s, device, limits, cgroup); rc != NVML_SUCCESS) return rc;
    return set_limit(s, *find_device(s, device)->gpu, cgroup, *limits);
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryLimits_v1(nvmlDevice_t device, nvmlGetMemoryLimits_v1_t* limits) {
  return with_state([&](State& s) -> nvmlReturn_t {
    nvmlDevice_st* d = find_device(s, device);
    if (!d || !limits) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = common_checks(s, *d, limits->nameSpace, "nvmlDeviceGetMemoryLimits_v1"); rc != NVML_SUCCESS)
      return rc;
    auto cgroup = cgroup_of_namespace(limits->nameSpace);
    if (!cgroup) return NVML_ERROR_OPERATING_SYSTEM;
    auto all = load_memory_limits(s);
    if (!all) return file_failure(all.error());
    auto it = std::find_if(all->begin(), all->end(), [&](const MemoryLimit& m) {
      return m.gpu_uuid == d->gpu->model.uuid && m.cgroup == *cgroup;
    });
    if (it == all->end()) return NVML_ERROR_NOT_FOUND;
    limits->softLimit = it->soft;
    limits->hardLimit = it->hard;
    limits->currentUsed = cgroup_used(s, *cgroup, it->gpu_uuid);
    return NVML_SUCCESS;
  });
}
