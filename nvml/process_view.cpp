#include "nvml/process_view.hpp"

#include <cstring>

#include "core/text.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac {

namespace {

constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE

}  // namespace

Result<ProcessView> ProcessView::open(const Config& cfg) {
  if (uses_simulated_machine(cfg))
    return user_error(
        "the burst reclaimer needs the driver's view of each process's memory: a simulated machine file has no "
        "driver; set nvml: {backend: nvml} (tests use the fake libnvidia-ml.so.1)");
  auto lib = nvml::Library::open(cfg.nvml.library);
  if (!lib) return std::unexpected(lib.error());
  if (!lib->fn().nvmlDeviceGetComputeRunningProcesses_v3)
    return user_error(cfg.nvml.library +
                      " has no nvmlDeviceGetComputeRunningProcesses_v3: the burst reclaimer "
                      "cannot see which process holds what; update the NVIDIA driver");
  if (auto r = lib->init(); !r) return std::unexpected(r.error());
  char version[96] = {};
  std::size_t stride = sizeof(nvmlProcessInfo_t);
  if (lib->fn().nvmlSystemGetDriverVersion(version, sizeof version) == NVML_SUCCESS)
    stride = nvml::nvml_process_info_size(version);
  return ProcessView(std::make_unique<nvml::Library>(std::move(*lib)), stride);
}

ProcessView::~ProcessView() {
  if (lib_) lib_->fn().nvmlShutdown();
}

Result<nvmlDevice_t> ProcessView::device(const std::string& gpu_uuid) const {
  return lib_->device_by_uuid(gpu_uuid);
}

Result<std::vector<GpuProcessMemory>> ProcessView::processes(const std::string& gpu_uuid) const {
  auto dev = device(gpu_uuid);
  if (!dev) return std::unexpected(dev.error());
  const auto call = lib_->fn().nvmlDeviceGetComputeRunningProcesses_v3;
  // The list may grow between the calls: ask for room, then again with some to spare.
  unsigned int count = 0;
  nvmlReturn_t rc = call(*dev, &count, nullptr);
  std::vector<unsigned char> buffer;
  for (int attempt = 0; rc == NVML_ERROR_INSUFFICIENT_SIZE && attempt < 4; ++attempt) {
    count += 16;
    buffer.assign(static_cast<std::size_t>(count) * stride_, 0);
    rc = call(*dev, &count, reinterpret_cast<nvmlProcessInfo_t*>(buffer.data()));
  }
  if (rc == NVML_SUCCESS && buffer.empty()) count = 0;
  if (auto r = lib_->check(rc, "nvmlDeviceGetComputeRunningProcesses_v3"); !r)
    return std::unexpected(r.error().wrap("GPU " + gpu_uuid));
  std::vector<GpuProcessMemory> out;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlProcessInfo_t info{};
    std::memcpy(&info, buffer.data() + static_cast<std::size_t>(i) * stride_, sizeof info);
    // NVML_VALUE_NOT_AVAILABLE: the driver does not say (no process is taken for a huge borrower).
    if (info.usedGpuMemory == kNvmlValueNotAvailable) continue;
    out.push_back({static_cast<std::int64_t>(info.pid), info.usedGpuMemory});
  }
  return out;
}

}  // namespace gpufrac
