// Discovery of the 8-GPU machine (nvml/machines/dgx-8gpu-mixed.yaml, 4 MIG GPUs, 15 MIG devices):
//  - Simulated: the baseline, the simulated backend reading the machine file in process;
//  - FakeNvml: the real backend through the fake libnvidia-ml.so.1, as `gpufrac info` does it
//    (dlopen, nvmlInit_v2 - where the fake reads the same machine file -, every query,
//    nvmlShutdown, dlclose);
//  - FakeNvmlWarm: the same with the library already loaded and initialised, so only the NVML
//    queries of the backend are timed.
// Both sides attach device nodes from the same simulated host root. After the runs a line gives
// each FakeNvml variant's median (or single) real time as a ratio of the baseline's.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include "bench/ratio_main.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "nvml/discover.hpp"
#include "nvml/nvml_api.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachine = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/dgx-8gpu-mixed.yaml";

// Configs for both backends over one simulated host root, built once.
struct Setup {
  Config simulated, nvml;
};

bool setup_done = false;

const Setup& setup() {
  static const Setup s = [] {
    setup_done = true;
    char tmpl[] = "/tmp/gpufrac-bench-XXXXXX";
    Setup out;
    out.simulated = default_config();
    out.simulated.state_dir = ::mkdtemp(tmpl);
    out.simulated.host_root = out.simulated.state_dir + "/root";
    out.simulated.nvml.backend = NvmlBackend::simulated;
    out.simulated.nvml.machine = kMachine;
    auto machine = load_simulated_machine(kMachine);
    if (!machine || !write_simulated_host_root(*machine, out.simulated.host_root, false)) std::abort();
    out.nvml = out.simulated;
    out.nvml.nvml.backend = NvmlBackend::nvml;
    out.nvml.nvml.library = GPUFRAC_FAKE_NVML;
    ::setenv("GPUFRAC_FAKE_NVML_MACHINE", kMachine.c_str(), 1);
    return out;
  }();
  return s;
}

// Removes the host root when setup() made one.
void remove_setup() {
  if (setup_done) std::filesystem::remove_all(setup().simulated.state_dir);
}

void run_discovery(benchmark::State& state, const Config& cfg) {
  std::size_t mig_devices = 0;
  for (auto _ : state) {
    auto inv = discover(cfg);
    if (!inv) {
      state.SkipWithError(inv.error().message.c_str());
      return;
    }
    mig_devices = 0;
    for (const auto& g : inv->gpus) mig_devices += g.mig_instances.size();
    benchmark::DoNotOptimize(inv);
  }
  state.counters["mig_devices"] = static_cast<double>(mig_devices);
}

void BM_DiscoverySimulated(benchmark::State& state) {
  run_discovery(state, setup().simulated);
}

void BM_DiscoveryFakeNvml(benchmark::State& state) {
  run_discovery(state, setup().nvml);
}

// One nvmlInit_v2 held across the runs keeps the library loaded and its state read.
void BM_DiscoveryFakeNvmlWarm(benchmark::State& state) {
  const Config& cfg = setup().nvml;
  void* lib = ::dlopen(cfg.nvml.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto init = lib ? reinterpret_cast<decltype(&::nvmlInit_v2)>(::dlsym(lib, "nvmlInit_v2")) : nullptr;
  auto shutdown = lib ? reinterpret_cast<decltype(&::nvmlShutdown)>(::dlsym(lib, "nvmlShutdown")) : nullptr;
  if (!init || !shutdown || init() != NVML_SUCCESS) {
    state.SkipWithError("cannot load and initialise the fake libnvidia-ml.so.1");
    return;
  }
  run_discovery(state, cfg);
  shutdown();
  ::dlclose(lib);
}

BENCHMARK(BM_DiscoverySimulated)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DiscoveryFakeNvml)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DiscoveryFakeNvmlWarm)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufrac

int main(int argc, char** argv) {
  int rc = gpufrac::bench::run_with_ratios(
      argc, argv,
      {{"BM_DiscoveryFakeNvml", "BM_DiscoverySimulated"}, {"BM_DiscoveryFakeNvmlWarm", "BM_DiscoverySimulated"}});
  gpufrac::remove_setup();
  return rc;
}
