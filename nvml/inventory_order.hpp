// The one order both backends produce, so an inventory read through NVML equals the same machine
// read from its file whatever order the driver or the file lists things in.
#pragma once

#include "core/inventory/inventory.hpp"

namespace gpufrac {

// Profiles as `nvidia-smi mig -lgip` lists them (memory slices, then compute slices, then the NVML
// profile index), placement starts ascending, instances by (GPU instance id, compute instance id).
void canonical_order(Gpu& gpu);

}  // namespace gpufrac
