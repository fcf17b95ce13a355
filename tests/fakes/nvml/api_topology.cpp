// Topology queries, answered from the machine file's topology (docs/machines.md "Topology"): the
// PCIe path of each pair, each GPU's NUMA node, and its NVLinks. A GPU's NVLinks are numbered
// from 0 across its peers in index order (its links to the first NVLink peer first), so
// nvmlDeviceGetNvLinkRemotePciInfo_v2 names the peer at the other end of each. MIG device handles
// answer NOT_SUPPORTED, as GPU-only queries do.
#include "fake_entry.hpp"

using namespace gpufrac::fake_nvml;
using gpufrac::GpuLink;
using gpufrac::PcieLink;

namespace {

nvmlGpuTopologyLevel_t level_of(PcieLink link) {
  switch (link) {
    case PcieLink::pix:
      return NVML_TOPOLOGY_SINGLE;
    case PcieLink::pxb:
      return NVML_TOPOLOGY_MULTIPLE;
    case PcieLink::phb:
      return NVML_TOPOLOGY_HOSTBRIDGE;
    case PcieLink::node:
      return NVML_TOPOLOGY_NODE;
    default:
      return NVML_TOPOLOGY_SYSTEM;
  }
}

// The link of g to the GPU other points to; null for itself or an unknown pair.
const GpuLink* link_between(State& s, PhysicalGpu& g, nvmlDevice_t other) {
  PhysicalGpu* o = find_gpu(s, other);
  return o == nullptr || o == &g ? nullptr : g.model.link_to(o->model.uuid);
}

// The peer at the other end of NVLink `link` of g; null when the link is not active.
PhysicalGpu* nvlink_peer(State& s, const PhysicalGpu& g, unsigned int link) {
  unsigned int first = 0;
  for (const GpuLink& l : g.model.links) {
    if (link < first + l.nvlinks)
      for (auto& peer : s.gpus)
        if (peer->model.uuid == l.uuid) return peer.get();
    first += l.nvlinks;
  }
  return nullptr;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                                                  nvmlGpuTopologyLevel_t* level) {
  return with_state([&](State& s) -> nvmlReturn_t {
    PhysicalGpu* g = find_gpu(s, a);
    if (!g || !find_gpu(s, b) || !level) return NVML_ERROR_INVALID_ARGUMENT;
    if (find_gpu(s, b) == g) {
      *level = NVML_TOPOLOGY_INTERNAL;
      return NVML_SUCCESS;
    }
    const GpuLink* l = link_between(s, *g, b);
    if (!l || l->pcie == PcieLink::unknown) return NVML_ERROR_NOT_SUPPORTED;
    *level = level_of(l->pcie);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                       nvmlEnableState_t* active) {
  return with_state([&](State& s) -> nvmlReturn_t {
    PhysicalGpu* g = find_gpu(s, device);
    if (!g || !active || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
    *active = nvlink_peer(s, *g, link) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                                  nvmlPciInfo_t* pci) {
  return with_state([&](State& s) -> nvmlReturn_t {
    PhysicalGpu* g = find_gpu(s, device);
    if (!g || !pci || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
    PhysicalGpu* peer = nvlink_peer(s, *g, link);
    if (!peer) return NVML_ERROR_NOT_SUPPORTED;
    fill_pci_info(peer->model, *pci);
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuP2PCapsIndex_t index,
                                                     nvmlGpuP2PStatus_t* status) {
  return with_state([&](State& s) -> nvmlReturn_t {
    PhysicalGpu* g = find_gpu(s, a);
    if (!g || !find_gpu(s, b) || !status) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuLink* l = link_between(s, *g, b);
    const bool ok = index == NVML_P2P_CAPS_INDEX_NVLINK ? l && l->nvlinks > 0 : l != nullptr;
    *status = ok ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return with_gpu(device, [&](PhysicalGpu& g) -> nvmlReturn_t {
    if (!node) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g.model.numa_node) return NVML_ERROR_NOT_SUPPORTED;
    *node = *g.model.numa_node;
    return NVML_SUCCESS;
  });
}
