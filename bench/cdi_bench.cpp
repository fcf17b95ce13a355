// `gpufrac cdi generate` for the 8-GPU machine nvml/machines/dgx-8gpu-mixed.yaml (4 whole GPUs,
// 4 in MIG mode, 15 MIG instances: 79 devices with the default fractions and 4Gi/10Gi/48Gi memory
// shares), in process, as the command runs it up to the file write:
//  - Generate: discovery (simulated backend, host root without driver files), build_spec (device
//    names, the allocator and the planner per device), spec_json (canonical order + cdiVersion),
//    validate_spec (generate refuses to write a spec that fails it) and render_yaml;
//  - baselines: Discover (the discovery alone), Build (build_spec alone on a discovered inventory),
//    RenderYaml (rendering alone of the finished JSON); SpecJson and Validate time the other two
//    steps alone, to show where the time goes.
// After the runs, lines give Generate's median (or single) real time as a ratio of each baseline.
#include <unistd.h>

#include <benchmark/benchmark.h>

#include "bench/ratio_main.hpp"

#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "cdi/cdi_names.hpp"
#include "cdi/render.hpp"
#include "cdi/spec.hpp"
#include "cdi/validate.hpp"
#include "nvml/discover.hpp"

namespace gpufrac {
namespace {

const Config& config() {
  static const Config c = [] {
    Config out = default_config();
    out.nvml.backend = NvmlBackend::simulated;
    out.nvml.machine = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/dgx-8gpu-mixed.yaml";
    out.host_root = "/nonexistent-gpufrac-bench-root";  // the machine's own majors and minors
    out.cdi.memory_shares = {4ull << 30, 10ull << 30, 48ull << 30};
    return out;
  }();
  return c;
}

Inventory discovered() {
  auto inv = discover(config());
  if (!inv) {
    std::fprintf(stderr, "%s\n", inv.error().message.c_str());
    std::abort();
  }
  return *inv;
}

void BM_Generate(benchmark::State& state) {
  std::size_t bytes = 0, devices = 0;
  for (auto _ : state) {
    auto inv = discover(config());
    auto built = cdi::build_spec(*inv, config(), cdi::kKind);
    auto json = cdi::spec_json(built->spec);
    if (cdi::has_errors(cdi::validate_spec(json))) {
      state.SkipWithError("the spec fails validation");
      return;
    }
    std::string text = cdi::render_yaml(json, cdi::kSpecHeader);
    bytes = text.size();
    devices = built->spec.devices.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["devices"] = static_cast<double>(devices);
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_Discover(benchmark::State& state) {
  for (auto _ : state) {
    auto inv = discover(config());
    benchmark::DoNotOptimize(inv);
  }
}

void BM_Build(benchmark::State& state) {
  const Inventory inv = discovered();
  for (auto _ : state) {
    auto built = cdi::build_spec(inv, config(), cdi::kKind);
    benchmark::DoNotOptimize(built);
  }
}

void BM_RenderYaml(benchmark::State& state) {
  const auto json = cdi::spec_json(cdi::build_spec(discovered(), config(), cdi::kKind)->spec);
  for (auto _ : state) {
    std::string text = cdi::render_yaml(json, cdi::kSpecHeader);
    benchmark::DoNotOptimize(text);
  }
}

void BM_SpecJson(benchmark::State& state) {
  const auto built = cdi::build_spec(discovered(), config(), cdi::kKind);
  for (auto _ : state) {
    auto json = cdi::spec_json(built->spec);
    benchmark::DoNotOptimize(json);
  }
}

void BM_Validate(benchmark::State& state) {
  const auto json = cdi::spec_json(cdi::build_spec(discovered(), config(), cdi::kKind)->spec);
  for (auto _ : state) {
    auto problems = cdi::validate_spec(json);
    benchmark::DoNotOptimize(problems);
  }
}

BENCHMARK(BM_Generate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SpecJson)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Validate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Discover)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Build)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RenderYaml)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufrac

int main(int argc, char** argv) {
  return gpufrac::bench::run_with_ratios(argc, argv,
                                         {{"BM_Generate", "BM_Discover"},
                                          {"BM_Generate", "BM_Build"},
                                          {"BM_Generate", "BM_SpecJson"},
                                          {"BM_Generate", "BM_Validate"},
                                          {"BM_Generate", "BM_RenderYaml"}});
}
