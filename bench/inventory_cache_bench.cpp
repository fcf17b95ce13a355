// What the check of the inventory cache against its source (nvml/inventory_origin.hpp) adds to a
// booking's read of the cache, on the 8-GPU machine (nvml/machines/dgx-8gpu-mixed.yaml):
//  - ReadCache: the baseline, the cache read and parsed alone (what a booking did before);
//  - ReadCacheCheckedSimulated: inventory_for_allocation() on a simulated node: the same read, plus
//    the machine file read and hashed (FNV-1a 64) and compared;
//  - ReadCacheCheckedReal: the same on a real node's files: the cache plus
//    /proc/driver/nvidia/version and the 8 /proc/driver/nvidia/gpus/*/information files under the
//    simulated host root (what the static hook reads instead of NVML).
// A container without a request never reads the cache (the hook's fast path), so none of this is
// on that path. After the runs a line gives each checked variant's median as a ratio of the
// baseline's.
#include <stdlib.h>

#include <benchmark/benchmark.h>

#include "bench/ratio_main.hpp"

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/fs.hpp"
#include "nvml/discover.hpp"
#include "nvml/inventory_origin.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachine = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/dgx-8gpu-mixed.yaml";

struct Setup {
  Config simulated, real;
};

std::string scratch;

// A simulated node with its cache written, and a "real" node over the same host root (procfs
// version and GPU files) whose cache records that origin.
const Setup& setup() {
  static const Setup s = [] {
    char tmpl[] = "/tmp/gpufrac-bench-XXXXXX";
    scratch = ::mkdtemp(tmpl);
    Setup out;
    out.simulated = default_config();
    out.simulated.state_dir = scratch + "/sim";
    out.simulated.host_root = scratch + "/root";
    out.simulated.nvml.backend = NvmlBackend::simulated;
    out.simulated.nvml.machine = kMachine;
    auto machine = load_simulated_machine(kMachine);
    if (!machine || !write_simulated_host_root(*machine, out.simulated.host_root, false)) std::abort();
    if (!fs::write_file_atomic(out.simulated.host_root + "/proc/driver/nvidia/version",
                               "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 2024\n"))
      std::abort();
    if (!inventory_for_allocation(out.simulated)) std::abort();
    out.real = out.simulated;
    out.real.state_dir = scratch + "/real";
    out.real.nvml.backend = NvmlBackend::nvml;
    out.real.nvml.machine.clear();
    Inventory inv = machine->inventory;
    auto origin = current_origin(out.real);
    if (!origin) std::abort();
    inv.origin = *origin;
    if (!write_inventory_cache(out.real, inv)) std::abort();
    return out;
  }();
  return s;
}

void BM_ReadCache(benchmark::State& state) {
  const Config& cfg = setup().simulated;
  for (auto _ : state) {
    auto inv = read_inventory_cache(cfg);
    if (!inv) state.SkipWithError(inv.error().message.c_str());
    benchmark::DoNotOptimize(inv);
  }
}

void BM_ReadCacheCheckedSimulated(benchmark::State& state) {
  const Config& cfg = setup().simulated;
  for (auto _ : state) {
    auto inv = inventory_for_allocation(cfg);
    if (!inv) state.SkipWithError(inv.error().message.c_str());
    benchmark::DoNotOptimize(inv);
  }
}

void BM_ReadCacheCheckedReal(benchmark::State& state) {
  const Config& cfg = setup().real;
  for (auto _ : state) {
    auto inv = inventory_for_allocation(cfg);
    if (!inv) state.SkipWithError(inv.error().message.c_str());
    benchmark::DoNotOptimize(inv);
  }
}

BENCHMARK(BM_ReadCache)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadCacheCheckedSimulated)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadCacheCheckedReal)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufrac

int main(int argc, char** argv) {
  int rc = gpufrac::bench::run_with_ratios(
      argc, argv, {{"BM_ReadCacheCheckedSimulated", "BM_ReadCache"}, {"BM_ReadCacheCheckedReal", "BM_ReadCache"}}, 3);
  if (!gpufrac::scratch.empty()) std::filesystem::remove_all(gpufrac::scratch);
  return rc;
}
