// The ledger under load: 1,000 (and 100) live bookings on a simulated 64-GPU machine (64x
// A100-SXM4-80GB, generated here as a machine file and loaded by the simulated backend).
//  - ReserveRelease: one Ledger::reserve (flock, read + parse 1,000 entries, allocate, write temp +
//    fsync + rename + directory fsync; processes are checked only on a refusal) and one
//    Ledger::release (the same cycle without the allocation), as a container start and stop cost
//    them. The state directory is on tmpfs (/dev/shm), as /run/gpufrac is on a real node.
//    ReserveRelease100: the same with 100 bookings.
//  - Allocate: the baseline, the pure allocate() on the same 1,000 bookings in memory;
//  - JsonLoadSave: parse_ledger (the fast reader of the writer's layout) + ledger_to_json, no I/O;
//  - StrictJsonLoadSave: the same through the strict JSON reader (every read before the fast one).
// After the runs, lines give ReserveRelease's median (or single) real time as a ratio of each.
#include <stdlib.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include "bench/ratio_main.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "core/allocator/allocator.hpp"
#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_json.hpp"
#include "core/text.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

constexpr int kGpus = 64;

std::string machine_yaml() {
  std::string y =
      "description: \"64x A100-SXM4-80GB, MIG disabled (ledger benchmark)\"\ndriver-version: \"550.54.15\"\ngpus:\n";
  for (int i = 0; i < kGpus; ++i)
    y += text::cat("  - {name: NVIDIA A100-SXM4-80GB, uuid: GPU-", 10000000 + i, "-0000-0000-0000-", 100000000000 + i,
                   ", pci-bus-id: \"00000000:", 10 + i, ":00.0\", memory-mib: 81920, compute-capability: \"8.0\"}\n");
  return y;
}

Request fraction(const char* f) {
  return **parse_request({{"gpufrac.io/fraction", f}}, true);
}

struct Setup {
  Inventory inventory;
  AllocationConfig config;
  LedgerOptions options;
  LedgerState state;  // the 1,000 bookings
  std::string json;
};

Setup make_setup(int bookings) {
  Setup out;
  auto machine = load_simulated_machine_string(machine_yaml(), "bench-64gpu.yaml");
  if (!machine) {
    std::fprintf(stderr, "%s\n", machine.error().message.c_str());
    std::abort();
  }
  out.inventory = machine->inventory;
  out.config.max_shares_per_gpu = 0;
  std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string tmpl = base + "/gpufrac-ledger-bench-XXXXXX";
  std::string dir = ::mkdtemp(tmpl.data());
  out.options = LedgerOptions{dir + "/ledger.json", dir + "/ledger.lock", "/proc", 120, {}};
  Ledger ledger(out.options);
  for (int i = 0; i < bookings; ++i) {
    ReserveArgs a{text::cat("ctr-", i), "", fraction("0.05"), BookingSource::hook, ::getpid(), std::nullopt};
    if (!ledger.reserve(a, out.inventory, out.config)) std::abort();
  }
  out.state = *ledger.read();
  out.json = ledger_to_json(out.state);
  return out;
}

const Setup& setup(int bookings = 1000) {
  static std::map<int, Setup> made;
  auto it = made.find(bookings);
  if (it == made.end()) it = made.emplace(bookings, make_setup(bookings)).first;
  return it->second;
}

void reserve_release(benchmark::State& state, int bookings) {
  const Setup& s = setup(bookings);
  Ledger ledger(s.options);
  ReserveArgs a{"bench", "", fraction("0.05"), BookingSource::hook, ::getpid(), std::nullopt};
  for (auto _ : state) {
    auto b = ledger.reserve(a, s.inventory, s.config);
    if (!b || !ledger.release("bench")) {
      state.SkipWithError(b ? "release failed" : b.error().message.c_str());
      return;
    }
  }
  state.counters["bookings"] = static_cast<double>(ledger.read()->entries.size());
}

void BM_ReserveRelease(benchmark::State& state) {
  reserve_release(state, 1000);
}

void BM_ReserveRelease100(benchmark::State& state) {
  reserve_release(state, 100);
}

void BM_Allocate(benchmark::State& state) {
  const Setup& s = setup();
  const Request r = fraction("0.05");
  for (auto _ : state) {
    auto g = allocate(r, s.inventory, s.state.entries, s.config);
    benchmark::DoNotOptimize(g);
  }
}

// One reader over the 1,000-entry text, then the writer.
void load_save(benchmark::State& state, Result<LedgerState> (*reader)(std::string_view, const std::string&)) {
  const Setup& s = setup();
  for (auto _ : state) {
    auto loaded = reader(s.json, "ledger.json");
    auto text = ledger_to_json(*loaded);
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(s.json.size());
}

void BM_JsonLoadSave(benchmark::State& state) {
  load_save(state, parse_ledger);
}

void BM_StrictJsonLoadSave(benchmark::State& state) {
  load_save(state, parse_ledger_json);
}

BENCHMARK(BM_ReserveRelease)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReserveRelease100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Allocate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_JsonLoadSave)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StrictJsonLoadSave)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufrac

int main(int argc, char** argv) {
  int rc = gpufrac::bench::run_with_ratios(argc, argv,
                                           {{"BM_ReserveRelease", "BM_Allocate"},
                                            {"BM_ReserveRelease", "BM_JsonLoadSave"},
                                            {"BM_JsonLoadSave", "BM_StrictJsonLoadSave"}},
                                           1);
  for (int n : {100, 1000})
    std::filesystem::remove_all(std::filesystem::path(gpufrac::setup(n).options.path).parent_path());
  return rc;
}
