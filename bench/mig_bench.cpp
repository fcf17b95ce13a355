// Time to grant a MIG request with dynamic MIG on the simulated H100-80GB, through the real NVML
// backend over the fake libnvidia-ml.so.1 (its state in a file, as between processes), state
// directory on tmpfs. Each iteration grants 1g.10gb to a container and releases it:
//  - StaticGrant (baseline): an existing idle instance on a static-MIG GPU (simulated backend):
//    Ledger::reserve + release, what gpufrac-hook does for a static grant;
//  - DynamicReuse: provision_mig when an idle recorded instance is there: the ordinary reservation
//    reuses it (no NVML), then release records it idle again;
//  - DynamicCreate: provision_mig on an empty GPU: plan, MIG lock, NVML opened, GPU instance +
//    compute instance created under the journal, inventory rediscovered and cached, CDI spec
//    rewritten, booking; then release. Destroying the instance again is not timed;
//  - ExecCreate: the same run as gpufrac-hook does it, `gpufrac mig provision` as a child process
//    (run_mig_provision), then release.
// After the runs, lines give each median real time as a ratio of StaticGrant's (and ExecCreate's of
// DynamicCreate's: the cost of the extra process).
#include <stdlib.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "bench/ratio_main.hpp"
#include "cdi/spec_write.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/text.hpp"
#include "exec/mig_exec.hpp"
#include "nvml/discover.hpp"
#include "nvml/mig_provision.hpp"
#include "nvml/mig_reclaim.hpp"
#include "nvml/mig_steps.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";

[[noreturn]] void die(const Error& e) {
  std::fprintf(stderr, "mig bench: %s\n", e.message.c_str());
  std::exit(2);
}

template <class T>
T need(Result<T> r) {
  if (!r) die(r.error());
  return std::move(*r);
}

// A fresh state directory with a config file: dynamic MIG over the fake, or static on a simulated
// machine with two idle 1g.10gb instances.
Config setup(const std::string& dir, bool dynamic) {
  std::filesystem::remove_all(dir);
  const std::string machine = kMachines + (dynamic ? "h100-80gb-mig-empty.yaml" : "h100-80gb-mig.yaml");
  ::setenv("GPUFRAC_FAKE_NVML_MACHINE", machine.c_str(), 1);
  ::setenv("GPUFRAC_FAKE_NVML_STATE", (dir + "/fake-nvml.json").c_str(), 1);
  if (!write_simulated_host_root(need(load_simulated_machine(machine)), dir + "/root", false)) std::exit(2);
  const std::string nvml = dynamic ? text::cat("{backend: nvml, library: ", GPUFRAC_FAKE_NVML, "}")
                                   : text::cat("{backend: simulated, machine: ", machine, "}");
  const std::string yaml = text::cat("state-dir: ", dir, "/state\nhost-root: ", dir, "/root\nnvml: ", nvml,
                                     "\nmig: {mode: ", dynamic ? "dynamic" : "static", "}\ncdi: {output: ", dir,
                                     "/cdi/gpufrac.yaml}\ncli: {path: ", GPUFRAC_CLI, "}\n");
  if (!fs::write_file_atomic(dir + "/config.yaml", yaml)) std::exit(2);
  Config cfg = need(load_config_file(dir + "/config.yaml"));
  if (dynamic) {
    need(rediscover_mig(cfg));
  } else if (auto r = write_inventory_cache(cfg, need(discover(cfg))); !r) {
    die(r.error());
  }
  return cfg;
}

ReserveArgs args() {
  return ReserveArgs{
      "bench",    "",          **parse_request({{"gpufrac.io/mig-profile", "1g.10gb"}}, true), BookingSource::hook,
      ::getpid(), std::nullopt};
}

void release(const Config& cfg) {
  if (!Ledger(LedgerOptions::from(cfg)).release("bench")) std::exit(2);
}

void BM_StaticGrant(benchmark::State& state) {
  const Config cfg = setup("/dev/shm/gpufrac-mig-bench-static", false);
  const Inventory inv = need(inventory_for_allocation(cfg));
  Ledger ledger(LedgerOptions::from(cfg));
  for (auto _ : state) {
    need(ledger.reserve(args(), inv, cfg.allocation));
    release(cfg);
  }
}

void BM_DynamicReuse(benchmark::State& state) {
  const Config cfg = setup("/dev/shm/gpufrac-mig-bench-reuse", true);
  need(provision_mig(cfg, args(), cdi::spec_refresher(cfg)));  // creates the instance once
  release(cfg);
  for (auto _ : state) {
    auto r = need(provision_mig(cfg, args(), cdi::spec_refresher(cfg)));
    if (r.created) state.SkipWithError("the idle instance was not reused");
    release(cfg);
  }
}

// Destroys the released instance again (not timed): gc with the idle timeout passed.
void destroy_idle(const Config& cfg) {
  auto r =
      need(reclaim_idle_mig(cfg, static_cast<std::int64_t>(std::time(nullptr)) + 100000, cdi::spec_refresher(cfg)));
  if (r.destroyed.size() != 1) die(Error{"gc did not destroy the idle instance"});
}

void BM_DynamicCreate(benchmark::State& state) {
  const Config cfg = setup("/dev/shm/gpufrac-mig-bench-create", true);
  for (auto _ : state) {
    auto r = need(provision_mig(cfg, args(), cdi::spec_refresher(cfg)));
    if (!r.created) state.SkipWithError("nothing was created");
    release(cfg);
    state.PauseTiming();
    destroy_idle(cfg);
    state.ResumeTiming();
  }
}

void BM_ExecCreate(benchmark::State& state) {
  const Config cfg = setup("/dev/shm/gpufrac-mig-bench-exec", true);
  const ProvisionCall call{"bench", "", ::getpid(), BookingSource::hook, {{"gpufrac.io/mig-profile", "1g.10gb"}}};
  for (auto _ : state) {
    auto out = need(run_mig_provision(cfg, call));
    if (out.find("\"created\":{") == std::string::npos) state.SkipWithError("nothing was created");
    release(cfg);
    state.PauseTiming();
    destroy_idle(cfg);
    state.ResumeTiming();
  }
}

BENCHMARK(BM_StaticGrant)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DynamicReuse)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DynamicCreate)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ExecCreate)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace gpufrac

int main(int argc, char** argv) {
  return gpufrac::bench::run_with_ratios(argc, argv,
                                         {{"BM_DynamicReuse", "BM_StaticGrant"},
                                          {"BM_DynamicCreate", "BM_StaticGrant"},
                                          {"BM_ExecCreate", "BM_StaticGrant"},
                                          {"BM_ExecCreate", "BM_DynamicCreate"}});
}
