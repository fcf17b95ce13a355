#include "fake_state.hpp"

#include <algorithm>
#include <cstdio>

#include "core/text.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::fake_nvml {

namespace {

std::uint32_t max_mig_devices(const std::vector<MigProfile>& table) {
  std::uint32_t n = 0;
  for (const auto& p : table) n = std::max(n, p.compute_slices);
  return n;
}

Result<> load_mig(PhysicalGpu& gpu, const Gpu& model) {
  gpu.mig.current = model.mig_enabled;
  gpu.mig.pending = model.mig_pending;
  gpu.mig.slots.assign(max_mig_devices(gpu.profile_table), nullptr);
  for (const MigInstance& m : model.mig_instances) {
    const MigProfile* p = gpu.profile_by_id(m.profile_id);
    if (!p) return internal_error(text::cat("GPU ", model.index, ": no profile id ", m.profile_id));
    nvmlGpuInstance_st* gi = nullptr;
    for (auto& g : gpu.mig.gpu_instances)
      if (g->id == m.gi_id) gi = g.get();
    if (!gi) gi = add_gpu_instance(gpu, m.gi_id, *p, m.placement.start);
    const MigComputeProfile* cp = ci_profile_by_id(*gi, m.ci_profile_id);
    if (!cp) return internal_error(text::cat("GPU ", model.index, ": no compute profile id ", m.ci_profile_id));
    if (!add_compute_instance(*gi, m.ci_id, *cp, m.ci_start, m.uuid))
      return internal_error(text::cat("GPU ", model.index, ": no MIG device slot left for GPU instance ", m.gi_id));
  }
  return {};
}

}  // namespace

const MigProfile* PhysicalGpu::profile_by_index(std::uint32_t index) const {
  for (const auto& p : profile_table)
    if (p.index == index) return &p;
  return nullptr;
}

const MigProfile* PhysicalGpu::profile_by_id(std::uint32_t id) const {
  for (const auto& p : profile_table)
    if (p.id == id) return &p;
  return nullptr;
}

Result<std::unique_ptr<State>> state_of(const SimulatedMachine& m) {
  const SimulatedMachine* machine = &m;
  auto state = std::make_unique<State>();
  state->driver_version = machine->inventory.driver_version;
  for (std::size_t i = 0; i < machine->inventory.gpus.size(); ++i) {
    auto gpu = std::make_unique<PhysicalGpu>();
    gpu->model = machine->inventory.gpus[i];
    gpu->profile_table = machine->mig_profile_tables.at(i);
    gpu->handle.gpu = gpu.get();
    if (auto r = load_mig(*gpu, gpu->model); !r) return std::unexpected(r.error());
    state->gpus.push_back(std::move(gpu));
  }
  return state;
}

nvmlGpuInstance_st* add_gpu_instance(PhysicalGpu& gpu, std::uint32_t id, const MigProfile& profile,
                                     std::uint32_t start) {
  auto gi = std::make_unique<nvmlGpuInstance_st>();
  gi->gpu = &gpu;
  gi->id = id;
  gi->profile = profile;
  gi->placement = {start, profile.memory_slices};
  gpu.mig.gpu_instances.push_back(std::move(gi));
  return gpu.mig.gpu_instances.back().get();
}

nvmlComputeInstance_st* add_compute_instance(nvmlGpuInstance_st& gi, std::uint32_t id, const MigComputeProfile& profile,
                                             std::uint32_t start, std::string uuid) {
  auto& slots = gi.gpu->mig.slots;
  auto slot = gi.placement.start < slots.size() && !slots[gi.placement.start]
                  ? slots.begin() + gi.placement.start
                  : std::find(slots.begin(), slots.end(), nullptr);
  if (slot == slots.end()) return nullptr;
  auto ci = std::make_unique<nvmlComputeInstance_st>();
  ci->gi = &gi;
  ci->id = id;
  ci->profile_id = profile.id;
  ci->slices = profile.slices;
  ci->start = start;
  ci->uuid = std::move(uuid);
  ci->device.gpu = gi.gpu;
  ci->device.mig = ci.get();
  *slot = ci.get();
  gi.compute_instances.push_back(std::move(ci));
  return gi.compute_instances.back().get();
}

const MigComputeProfile* ci_profile_by_index(const nvmlGpuInstance_st& gi, std::uint32_t index) {
  for (const auto& c : gi.profile.compute_profiles)
    if (c.index == index) return &c;
  return nullptr;
}

const MigComputeProfile* ci_profile_by_id(const nvmlGpuInstance_st& gi, std::uint32_t id) {
  return gi.profile.compute_profile_by_id(id);
}

nvmlDevice_st* find_device(State& state, nvmlDevice_t device) {
  if (!device) return nullptr;
  for (auto& gpu : state.gpus) {
    if (&gpu->handle == device) return device;
    for (auto* ci : gpu->mig.slots)
      if (ci && &ci->device == device) return device;
  }
  return nullptr;
}

PhysicalGpu* find_gpu(State& state, nvmlDevice_t device) {
  for (auto& gpu : state.gpus)
    if (device && &gpu->handle == device) return gpu.get();
  return nullptr;
}

nvmlGpuInstance_st* find_gpu_instance(State& state, nvmlGpuInstance_t gi) {
  for (auto& gpu : state.gpus)
    for (auto& g : gpu->mig.gpu_instances)
      if (gi && g.get() == gi) return gi;
  return nullptr;
}

nvmlComputeInstance_st* find_compute_instance(State& state, nvmlComputeInstance_t ci) {
  for (auto& gpu : state.gpus)
    for (auto* c : gpu->mig.slots)
      if (ci && c == ci) return ci;
  return nullptr;
}

void fill_pci_info(const Gpu& g, nvmlPciInfo_t& pci) {
  pci = nvmlPciInfo_t{};
  const std::string& id = g.pci_bus_id;
  id.copy(pci.busId, sizeof pci.busId - 1);
  unsigned int function = 0;
  std::sscanf(id.c_str(), "%x:%x:%x.%x", &pci.domain, &pci.bus, &pci.device, &function);
  std::snprintf(pci.busIdLegacy, sizeof pci.busIdLegacy, "%04x:%02x:%02x.%x", pci.domain & 0xffff, pci.bus & 0xff,
                pci.device & 0xff, function & 0xf);
  pci.pciDeviceId = 0x10DE;
}

}  // namespace gpufrac::fake_nvml
