// The inventory cache against its source (nvml/inventory_origin.hpp): what it records, what a
// change of the machine says, and that readers and the allocation path refresh a stale cache with
// nothing booked and refuse it, naming what changed, while a share is booked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/inventory_origin.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"
#include "scratch_dir.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";

Config sim_config(const std::string& machine) {
  Config c = default_config();
  c.nvml.backend = NvmlBackend::simulated;
  c.nvml.machine = kMachines + machine;
  c.state_dir = test::scratch_dir("gpufrac-origin");
  c.host_root = c.state_dir + "/root";
  return c;
}

// A booking that holds GPU 0 of the cached inventory (a running container's, as far as the ledger
// knows: this process).
void book(const Config& c) {
  Ledger ledger(LedgerOptions::from(c));
  auto inv = inventory_for_allocation(c);
  ASSERT_TRUE(inv) << inv.error().message;
  Request r;
  r.fraction = 250000;
  ReserveArgs args{"c1", "", r, BookingSource::hook, ::getpid(), std::nullopt, ""};
  auto b = ledger.reserve(args, *inv, c.allocation);
  ASSERT_TRUE(b) << b.error().message;
}

TEST(InventoryOrigin, SimulatedRecordsTheMachineFileAndItsHash) {
  Config c = sim_config("a100-40gb-x2.yaml");
  auto inv = discover(c);
  ASSERT_TRUE(inv) << inv.error().message;
  ASSERT_TRUE(inv->origin);
  EXPECT_EQ(inv->origin->machine, kMachines + "a100-40gb-x2.yaml");
  EXPECT_EQ(inv->origin->machine_hash, text::fnv1a64_hex(*fs::read_file(kMachines + "a100-40gb-x2.yaml")));
  EXPECT_EQ(inv->origin->driver, "");
  EXPECT_TRUE(inv->origin->gpus.empty());
  auto back = inventory_from_json(nlohmann::json::parse(to_json(*inv).dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->origin, inv->origin);
}

TEST(InventoryOrigin, ChangesInWords) {
  InventoryOrigin dgx{kMachines + "dgx-8gpu-mixed.yaml", "aaaa", "", {}};
  InventoryOrigin x2{kMachines + "a100-40gb-x2.yaml", "bbbb", "", {}};
  EXPECT_EQ(origin_change(dgx, dgx), "");
  EXPECT_EQ(origin_change(dgx, x2),
            "the machine file is now " + kMachines + "a100-40gb-x2.yaml, was " + kMachines + "dgx-8gpu-mixed.yaml");
  InventoryOrigin edited = dgx;
  edited.machine_hash = "cccc";
  EXPECT_EQ(origin_change(dgx, edited), "the machine file " + kMachines + "dgx-8gpu-mixed.yaml changed");
  InventoryOrigin real{"", "", "550.54.15", {"GPU-a", "GPU-b"}};
  InventoryOrigin swapped{"", "", "560.35.03", {"GPU-b", "GPU-c"}};
  EXPECT_EQ(origin_change(real, swapped), "driver 550.54.15 -> 560.35.03; GPUs gone: GPU-a; GPUs new: GPU-c");
  EXPECT_EQ(origin_change(real, dgx),
            "the node is now the simulated machine " + kMachines + "dgx-8gpu-mixed.yaml, was real GPUs");
  EXPECT_EQ(origin_change(std::nullopt, dgx), "");  // a cache written before origins is not compared
}

TEST(InventoryOrigin, GpuUuidOfTheDriversInformationFile) {
  EXPECT_EQ(uuid_of_gpu_information("Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 0\n"
                                    "GPU UUID: \t GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5\nBus Type: \t PCIe\n"),
            "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5");
  EXPECT_EQ(uuid_of_gpu_information("Model: x\n"), "");
}

TEST(InventoryOrigin, StaleCacheWithNothingBookedIsRefreshed) {
  Config c = sim_config("dgx-8gpu-mixed.yaml");
  ASSERT_TRUE(inventory_for_allocation(c));
  c.nvml.machine = kMachines + "a100-40gb-x2.yaml";
  auto read = inventory_for_reading(c);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->gpus.size(), 2u);
  EXPECT_EQ(read_inventory_cache(c)->gpus.size(), 8u);  // a reader never writes the cache
  auto alloc = inventory_for_allocation(c);
  ASSERT_TRUE(alloc) << alloc.error().message;
  EXPECT_EQ(alloc->gpus.size(), 2u);
  EXPECT_EQ(read_inventory_cache(c)->gpus.size(), 2u);
  EXPECT_EQ(read_inventory_cache(c)->origin->machine, kMachines + "a100-40gb-x2.yaml");
}

TEST(InventoryOrigin, StaleCacheWithABookingIsRefusedNamingTheChange) {
  Config c = sim_config("dgx-8gpu-mixed.yaml");
  book(c);
  c.nvml.machine = kMachines + "a100-40gb-x2.yaml";
  const std::string expected = "the inventory cache " + c.inventory_cache_path() +
                               " no longer matches this node (the machine file is now " + kMachines +
                               "a100-40gb-x2.yaml, was " + kMachines +
                               "dgx-8gpu-mixed.yaml); 1 booking holds devices from it, so it was not refreshed: run "
                               "gpufrac info --refresh (once they are released, or now to take the node as it is)";
  for (auto* f : {&inventory_for_reading, &inventory_for_allocation}) {
    auto inv = (*f)(c, {});
    ASSERT_FALSE(inv);
    EXPECT_EQ(inv.error().message, expected);
    EXPECT_EQ(inv.error().kind, ErrorKind::user);
  }
  EXPECT_EQ(read_inventory_cache(c)->gpus.size(), 8u);
}

TEST(InventoryOrigin, RealNodeComparesTheDriversProcfs) {
  Config c = sim_config("a100-40gb-x2.yaml");
  auto machine = load_simulated_machine(c.nvml.machine);
  ASSERT_TRUE(machine);
  ASSERT_TRUE(write_simulated_host_root(*machine, c.host_root, false));
  ASSERT_TRUE(fs::make_dirs(c.host_root + "/proc/driver/nvidia"));
  ASSERT_TRUE(fs::write_file_atomic(c.host_root + "/proc/driver/nvidia/version",
                                    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 2024\n"));
  c.nvml.backend = NvmlBackend::nvml;
  c.nvml.machine.clear();
  auto o = current_origin(c);
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->driver, "550.54.15");
  EXPECT_EQ(o->gpus, (std::vector<std::string>{"GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c",
                                               "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5"}));
  // A cache of the same node, then one GPU gone: stale; nothing booked, but without a way to
  // rediscover a real node it is refused.
  Inventory cached = machine->inventory;
  cached.origin = *o;
  ASSERT_TRUE(write_inventory_cache(c, cached));
  ASSERT_TRUE(inventory_for_reading(c));
  std::error_code ec;
  std::filesystem::remove_all(c.host_root + "/proc/driver/nvidia/gpus/0000:0f:00.0", ec);
  auto inv = inventory_for_allocation(c);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "the inventory cache " + c.inventory_cache_path() +
                                     " no longer matches this node (GPUs gone: "
                                     "GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c); it cannot be rediscovered here: run "
                                     "gpufrac info --refresh");
  int called = 0;
  auto refreshed = inventory_for_allocation(c, [&](const Config&) -> Result<Inventory> {
    ++called;
    return machine->inventory;
  });
  ASSERT_TRUE(refreshed) << refreshed.error().message;
  EXPECT_EQ(called, 1);
}

}  // namespace
}  // namespace gpufrac
