#include "core/inventory/inventory.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace gpufrac {

unsigned driver_major(std::string_view version) {
  auto major = text::parse_u64(version.substr(0, version.find('.')));
  return major && *major < 100000 ? static_cast<unsigned>(*major) : 0;
}

std::uint32_t Gpu::memory_slices() const {
  std::uint32_t slices = 0;
  for (const auto& p : mig_profiles)
    for (auto start : p.placement_starts) slices = std::max(slices, start + p.memory_slices);
  return slices;
}

const MigProfile* Gpu::profile_by_name(const std::string& n) const {
  for (const auto& p : mig_profiles)
    if (p.name == n) return &p;
  return nullptr;
}

const MigProfile* Gpu::profile_by_id(std::uint32_t id) const {
  for (const auto& p : mig_profiles)
    if (p.id == id) return &p;
  return nullptr;
}

const GpuLink* Gpu::link_to(const std::string& other) const {
  for (const auto& l : links)
    if (l.uuid == other) return &l;
  return nullptr;
}

const MigComputeProfile* MigProfile::compute_profile_by_id(std::uint32_t ci_id) const {
  for (const auto& c : compute_profiles)
    if (c.id == ci_id) return &c;
  return nullptr;
}

const Gpu* Inventory::gpu_by_index(std::uint32_t index) const {
  for (const auto& g : gpus)
    if (g.index == index) return &g;
  return nullptr;
}

const Gpu* Inventory::gpu_by_uuid(const std::string& uuid) const {
  for (const auto& g : gpus)
    if (g.uuid == uuid) return &g;
  return nullptr;
}

std::optional<std::pair<const Gpu*, const MigInstance*>> Inventory::mig_by_uuid(const std::string& uuid) const {
  for (const auto& g : gpus)
    for (const auto& m : g.mig_instances)
      if (m.uuid == uuid) return std::make_pair(&g, &m);
  return std::nullopt;
}

bool Inventory::same_hardware(const Inventory& o) const {
  return driver_version == o.driver_version && gpus == o.gpus && control_nodes == o.control_nodes && driver == o.driver;
}

const char* to_string(DriverFileKind k) {
  switch (k) {
    case DriverFileKind::library:
      return "library";
    case DriverFileKind::link:
      return "link";
    case DriverFileKind::binary:
      return "binary";
    case DriverFileKind::firmware:
      return "firmware";
    case DriverFileKind::socket:
      return "socket";
  }
  return "?";
}

}  // namespace gpufrac
