// How two GPUs of a node reach each other, as `nvidia-smi topo -m` shows it: a bonded set of NVLinks
// (NV#), else the PCIe path between them (PIX, PXB, PHB, NODE, SYS). Read from NVML on a real node
// (nvml/nvml_topology.cpp), declared in a simulated machine file (docs/machines.md "Topology").
// Plain data; the inventory carries one link per pair of GPUs, placement ranks them
// (core/allocator/topology_place.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpufrac {

// The PCIe path between two GPUs, closest first (NVML's nvmlGpuTopologyLevel_t): at most one PCIe
// bridge (PIX), several bridges without the host bridge (PXB), through a host bridge (PHB), between
// host bridges of one NUMA node (NODE), across NUMA nodes (SYS); unknown when NVML could not say.
enum class PcieLink : std::uint8_t { pix, pxb, phb, node, sys, unknown };

// Bonded NVLinks between two GPUs: at most NVML's NVML_NVLINK_MAX_LINKS per GPU.
inline constexpr std::uint32_t kMaxNvlinks = 18;

struct GpuLink {
  std::string uuid;           // the other GPU (GPU-<uuid>)
  std::uint32_t nvlinks = 0;  // NVLinks between the two (0: none)
  PcieLink pcie = PcieLink::unknown;
  bool operator==(const GpuLink&) const = default;
};

const char* to_string(PcieLink link);
std::optional<PcieLink> pcie_link_from(std::string_view text);

// The cell nvidia-smi topo -m prints: "NV12" when NVLinks join them, else the PCIe path ("PXB",
// "SYS"), "?" when unknown.
std::string link_text(const GpuLink& link);

// How close a link is, as one number to compare (lower is closer): NVLinks first, more of them
// closer; then the PCIe path, PIX to SYS; unknown last.
std::uint32_t link_distance(const GpuLink& link);

}  // namespace gpufrac
