// The real backend's topology (core/inventory/gpu_link.hpp): per GPU its NUMA node, per pair the PCIe path
// (nvmlDeviceGetTopologyCommonAncestor) and the NVLinks between them: active links whose remote
// end is the other GPU (nvmlDeviceGetNvLinkState, nvmlDeviceGetNvLinkRemotePciInfo_v2). Through an
// NVSwitch the remote end is the switch: a pair NVML says can talk over NVLink
// (nvmlDeviceGetP2PStatus, NVLINK) then counts every active link of the GPU, as nvidia-smi topo -m
// shows NV12 between every pair of an NVSwitch system. Topology is advice for placement: a call
// the library lacks or that fails leaves that part unknown, never fails discovery.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "nvml/nvml_detail.hpp"

namespace gpufrac::nvml {

namespace {

PcieLink from_level(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE:
      return PcieLink::pix;
    case NVML_TOPOLOGY_MULTIPLE:
      return PcieLink::pxb;
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return PcieLink::phb;
    case NVML_TOPOLOGY_NODE:
      return PcieLink::node;
    case NVML_TOPOLOGY_SYSTEM:
      return PcieLink::sys;
    default:
      return PcieLink::unknown;
  }
}

// The bus ids at the remote end of each active NVLink of `device` ("" for a link whose end NVML
// does not say).
std::vector<std::string> nvlink_ends(const Library& lib, nvmlDevice_t device) {
  std::vector<std::string> ends;
  const auto& fn = lib.fn();
  if (!fn.nvmlDeviceGetNvLinkState) return ends;
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    if (fn.nvmlDeviceGetNvLinkState(device, link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
    nvmlPciInfo_t pci{};
    const bool known = fn.nvmlDeviceGetNvLinkRemotePciInfo_v2 &&
                       fn.nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, &pci) == NVML_SUCCESS;
    pci.busId[sizeof pci.busId - 1] = '\0';
    ends.push_back(known ? std::string(pci.busId) : std::string());
  }
  return ends;
}

// Bus ids compare without case and without the leading zeros of the domain ("00000000:07:00.0" is
// "0000:07:00.0").
std::string bus_key(std::string id) {
  for (char& c : id)
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  const auto colon = id.find(':');
  if (colon == std::string::npos) return id;
  std::string domain = id.substr(0, colon);
  domain.erase(0, std::min(domain.find_first_not_of('0'), domain.size()));
  return domain + id.substr(colon);
}

std::uint32_t nvlinks_between(const Library& lib, nvmlDevice_t a, nvmlDevice_t b, const std::vector<std::string>& ends,
                              const std::string& b_bus) {
  std::uint32_t direct = 0;
  for (const auto& end : ends)
    if (!end.empty() && bus_key(end) == bus_key(b_bus)) ++direct;
  if (direct > 0 || ends.empty() || !lib.fn().nvmlDeviceGetP2PStatus) return direct;
  nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_NOT_SUPPORTED;
  if (lib.fn().nvmlDeviceGetP2PStatus(a, b, NVML_P2P_CAPS_INDEX_NVLINK, &status) != NVML_SUCCESS ||
      status != NVML_P2P_STATUS_OK)
    return 0;
  return static_cast<std::uint32_t>(ends.size());  // through NVSwitches: every link of the GPU
}

PcieLink pcie_between(const Library& lib, nvmlDevice_t a, nvmlDevice_t b) {
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  if (!lib.fn().nvmlDeviceGetTopologyCommonAncestor ||
      lib.fn().nvmlDeviceGetTopologyCommonAncestor(a, b, &level) != NVML_SUCCESS)
    return PcieLink::unknown;
  return from_level(level);
}

std::optional<std::uint32_t> numa_of(const Library& lib, nvmlDevice_t device) {
  unsigned int node = 0;
  if (!lib.fn().nvmlDeviceGetNumaNodeId || lib.fn().nvmlDeviceGetNumaNodeId(device, &node) != NVML_SUCCESS ||
      node > 0xffff)
    return std::nullopt;
  return node;
}

}  // namespace

void read_topology(const Library& lib, const std::vector<nvmlDevice_t>& devices, std::vector<Gpu>& gpus) {
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].numa_node = numa_of(lib, devices[i]);
    const std::vector<std::string> ends = nvlink_ends(lib, devices[i]);
    for (std::size_t j = 0; j < gpus.size(); ++j) {
      if (i == j) continue;
      gpus[i].links.push_back({gpus[j].uuid, nvlinks_between(lib, devices[i], devices[j], ends, gpus[j].pci_bus_id),
                               pcie_between(lib, devices[i], devices[j])});
    }
  }
}

}  // namespace gpufrac::nvml
