// The driver's per-process view of GPU memory (nvmlDeviceGetComputeRunningProcesses_v3): which
// processes hold how much of each GPU. The burst reclaimer trusts this view alone
// (docs/architecture.md "Burstable memory"): a container's usage region is written by the container.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "nvml/nvml_library.hpp"

namespace gpufrac {

struct GpuProcessMemory {
  std::int64_t pid = 0;  // as the driver names it (the host's pid namespace for a caller in it)
  std::uint64_t bytes = 0;
  bool operator==(const GpuProcessMemory&) const = default;
};

class ProcessView {
 public:
  // nvml.library, opened and initialised; refused for a simulated machine (it has no driver) and for
  // a library without the call.
  static Result<ProcessView> open(const Config& cfg);
  ProcessView(ProcessView&&) noexcept = default;
  ProcessView& operator=(ProcessView&&) noexcept = default;
  ~ProcessView();

  // The processes holding memory on the GPU, as the driver lists them; one whose memory the driver
  // does not report (NVML_VALUE_NOT_AVAILABLE) is left out.
  Result<std::vector<GpuProcessMemory>> processes(const std::string& gpu_uuid) const;

 private:
  ProcessView(std::unique_ptr<nvml::Library> lib, std::size_t stride) : lib_(std::move(lib)), stride_(stride) {}
  Result<nvmlDevice_t> device(const std::string& gpu_uuid) const;
  std::unique_ptr<nvml::Library> lib_;
  std::size_t stride_ = sizeof(nvmlProcessInfo_t);  // bytes per entry for this driver
};

}  // namespace gpufrac
