// Topology of simulated machines (docs/machines.md "Topology"), its JSON form, and
// `gpufrac info --topology`. The real backend over the fake NVML reads the same links
// (nvml_backend_test's machine-by-machine comparison).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/topology_render.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

Inventory machine(const std::string& file) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/" + file);
  EXPECT_TRUE(m) << m.error().message;
  return m->inventory;
}

std::string link(const Inventory& inv, std::uint32_t a, std::uint32_t b) {
  const GpuLink* l = inv.gpus[a].link_to(inv.gpus[b].uuid);
  return l ? link_text(*l) + "/" + to_string(l->pcie) : "none";
}

TEST(Topology, TheDgxMachineHasNvlinkPairsAndTwoNumaNodes) {
  const Inventory inv = machine("dgx-8gpu-mixed.yaml");
  EXPECT_EQ(link(inv, 0, 1), "NV12/NODE");  // an NVLink pair on one socket: its PCIe path is NODE
  EXPECT_EQ(link(inv, 1, 0), "NV12/NODE");
  EXPECT_EQ(link(inv, 2, 3), "NV12/NODE");
  EXPECT_EQ(link(inv, 1, 2), "NODE/NODE");
  EXPECT_EQ(link(inv, 3, 4), "SYS/SYS");
  EXPECT_EQ(link(inv, 6, 7), "NV12/NODE");
  EXPECT_EQ(inv.gpus[3].numa_node, 0u);
  EXPECT_EQ(inv.gpus[4].numa_node, 1u);
  for (const auto& g : inv.gpus) EXPECT_EQ(g.links.size(), 7u) << g.index;
}

TEST(Topology, AMachineWithoutTopologyIsOneHostBridgeOnNodeZero) {
  const Inventory inv = machine("a100-40gb-x2.yaml");
  EXPECT_EQ(link(inv, 0, 1), "PHB/PHB");
  EXPECT_EQ(link(inv, 1, 0), "PHB/PHB");
  EXPECT_EQ(inv.gpus[0].numa_node, 0u);
  EXPECT_TRUE(machine("a100-40gb-x1.yaml").gpus[0].links.empty());
}

TEST(Topology, LinkDistanceOrdersNvlinksThenPcie) {
  auto d = [](std::uint32_t nv, PcieLink p) { return link_distance(GpuLink{"", nv, p}); };
  EXPECT_LT(d(18, PcieLink::sys), d(12, PcieLink::pix));
  EXPECT_LT(d(12, PcieLink::sys), d(2, PcieLink::pix));
  EXPECT_LT(d(1, PcieLink::sys), d(0, PcieLink::pix));
  EXPECT_LT(d(0, PcieLink::pix), d(0, PcieLink::pxb));
  EXPECT_LT(d(0, PcieLink::pxb), d(0, PcieLink::phb));
  EXPECT_LT(d(0, PcieLink::phb), d(0, PcieLink::node));
  EXPECT_LT(d(0, PcieLink::node), d(0, PcieLink::sys));
  EXPECT_LT(d(0, PcieLink::sys), d(0, PcieLink::unknown));
}

TEST(Topology, JsonKeepsLinksAndACacheWithoutThemIsUnknown) {
  const Inventory inv = machine("dgx-8gpu-mixed.yaml");
  nlohmann::json j = to_json(inv);
  EXPECT_EQ(j["gpus"][0]["links"][0].dump(),
            R"({"nvlinks":12,"pcie":"NODE","uuid":"GPU-2f8be0ec-efab-3361-bd37-99d69e8c7d55"})");
  EXPECT_EQ(j["gpus"][4]["numa_node"], 1);
  auto back = inventory_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->same_hardware(inv));
  for (auto& g : j["gpus"]) {
    g.erase("links");
    g.erase("numa_node");
  }
  auto old = inventory_from_json(j);
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_TRUE(old->gpus[0].links.empty());
  EXPECT_FALSE(old->gpus[0].numa_node);
}

TEST(Topology, InfoShowsTheMatrixAsNvidiaSmiTopoDoes) {
  Inventory inv = machine("a100-40gb-x2.yaml");
  inv.gpus[1].numa_node.reset();
  inv.gpus[1].links.clear();
  const std::string text = cli::render_topology(inv);
  EXPECT_EQ(text.substr(0, text.find("\nLegend")),
            "      GPU0  GPU1  NUMA Affinity\n"
            "GPU0  X     PHB   0\n"
            "GPU1  ?     X     N/A\n");
  EXPECT_NE(text.find("  NV#  = Connection traversing a bonded set of # NVLinks\n"), std::string::npos);
  EXPECT_EQ(cli::topology_json(inv).dump(),
            R"({"gpus":[{"index":0,"numa_node":0,"uuid":"GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5"},)"
            R"({"index":1,"numa_node":null,"uuid":"GPU-5ae7c110-fc7e-c29d-ca0b-696c52a0358c"}],)"
            R"("links":[["X","PHB"],["?","X"]]})");
}

constexpr const char* kTwoGpus =
    "driver-version: \"550.54.15\"\n"
    "gpus:\n"
    "  - {name: A, uuid: GPU-11111111-2222-3333-4444-555555555555, pci-bus-id: \"0:7:0.0\", memory-mib: 1, "
    "compute-capability: \"8.0\"}\n"
    "  - {name: A, uuid: GPU-11111111-2222-3333-4444-666666666666, pci-bus-id: \"0:8:0.0\", memory-mib: 1, "
    "compute-capability: \"8.0\"}\n";

std::string refusal(const std::string& topology) {
  auto m = load_simulated_machine_string(std::string(kTwoGpus) + topology, "m.yaml");
  return m ? "loaded" : m.error().message;
}

TEST(Topology, MalformedMatricesAreOneLineWithFileLineAndKey) {
  EXPECT_EQ(refusal("topology:\n  links: [[X, NV2], [NV2, X]]\n  numa: [0, 1]\n"), "loaded");
  EXPECT_EQ(refusal("topology:\n  links: [[X, NV2], [NV3, X]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links[1][0]: differs from GPU 0's link to GPU 1 (NV2); the matrix must be symmetric");
  EXPECT_EQ(refusal("topology:\n  links: [[X, PIX], [PXB, X]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links[1][0]: differs from GPU 0's link to GPU 1 (PIX); the matrix must be symmetric");
  EXPECT_EQ(refusal("topology:\n  links: [[PIX, PIX], [PIX, X]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links[0][0]: is GPU 0 itself; use X");
  EXPECT_EQ(refusal("topology:\n  links: [[X, NV0], [NV0, X]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links[0][1]: \"NV0\" is not a link; use X on the diagonal, else NV<links> (1 to 18), "
            "PIX, PXB, PHB, NODE or SYS");
  EXPECT_EQ(refusal("topology:\n  links: [[X, NV19], [NV19, X]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links[0][1]: \"NV19\" is not a link; use X on the diagonal, else NV<links> (1 to "
            "18), PIX, PXB, PHB, NODE or SYS");
  EXPECT_EQ(refusal("topology:\n  links: [[X, nvlink], [nvlink, X]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links[0][1]: \"nvlink\" is not a link; use X on the diagonal, else NV<links> (1 to "
            "18), PIX, PXB, PHB, NODE or SYS");
  EXPECT_EQ(refusal("topology:\n  links: [[X, SYS]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links: has 1 rows for 2 GPUs");
  EXPECT_EQ(refusal("topology:\n  links: [[X, SYS, SYS], [SYS, X]]\n  numa: [0, 0]\n"),
            "m.yaml:6: topology.links[0]: has 3 cells for 2 GPUs");
  EXPECT_EQ(refusal("topology:\n  links: [[X, SYS], [SYS, X]]\n  numa: [0]\n"),
            "m.yaml:7: topology.numa: lists 1 NUMA nodes for 2 GPUs");
  EXPECT_EQ(refusal("topology:\n  links: [[X, SYS], [SYS, X]]\n"),
            "m.yaml:6: topology: needs links (the topo -m matrix) and numa (one per GPU)");
  EXPECT_EQ(refusal("topology:\n  links: [[X, SYS], [SYS, X]]\n  numa: [0, 0]\n  nvswitch: true\n"),
            "m.yaml:8: topology.nvswitch: unknown key (accepted under topology: links, numa)");
}

}  // namespace
}  // namespace gpufrac
