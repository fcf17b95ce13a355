// A simulated NVIDIA driver install under a simulated host root (`gpufrac simulate init-root`), laid
// out as a real one is, so driver discovery, injection and the library cache run for real without a
// GPU: /proc/driver/nvidia/version, the libraries of the machine's driver version (the fake
// libcuda and libnvidia-ml from the driver kit the tests build, carrying the machine they simulate,
// and ELF stand-ins with the real SONAMEs), their links, a stale older libnvidia-ml that must never
// be picked, an ld.so.cache made by the host's ldconfig, nvidia-smi and ELF stand-ins for the other
// binaries, GSP firmware and the persistenced socket. The kit is <build>/fakes/driver-kit
// (tests/fakes/driver/README.md).
#pragma once

#include <string>

#include "core/error.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {

enum class SimDriverLayout {
  debian,    // /usr/lib/<multiarch>, with /etc/ld.so.cache
  lib64,     // /usr/lib64 (RHEL), with /etc/ld.so.cache
  no_cache,  // /usr/lib/<multiarch>, no /etc/ld.so.cache
  prefix,    // /usr/local/nvidia/{lib64,bin} found through /etc/ld.so.cache, /usr/bin/nvidia-smi a shell
             // wrapper that execs the real one (cloud GPU images lay the driver out so)
};

struct SimDriverOptions {
  std::string kit;  // the driver kit directory (lib/, bin/)
  SimDriverLayout layout = SimDriverLayout::debian;
};

// The stale version every simulated tree also holds (libnvidia-ml.so.<it>): never mounted.
inline constexpr const char* kSimStaleDriverVersion = "545.23.08";

Result<> write_simulated_driver(const SimulatedMachine& machine, const std::string& root, const SimDriverOptions& o);

// The devices the fake libcuda of a tree sees, each with the nodes it needs to be visible:
// "GPU-<uuid>=<bytes>@/dev/nvidia0,MIG-<uuid>=<bytes>@/dev/nvidia4+/dev/nvidia-caps/nvidia-cap30+...".
std::string simulated_cuda_devices(const SimulatedMachine& machine);

}  // namespace gpufrac
