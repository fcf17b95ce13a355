// The real backend: dlopen("libnvidia-ml.so.1") with the project's own minimal declarations
// (nvml_api.hpp). Device nodes are attached by discover(), not here.
#pragma once

#include <string>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

// Enumerates the driver version, GPUs, MIG modes, profiles and instances through NVML.
// A missing library is a one-line error saying the NVIDIA driver library was not found and
// suggesting --machine; a loaded library whose driver is absent says so too.
Result<Inventory> discover_nvml(const std::string& library);

}  // namespace gpufrac
