// The machine a simulated driver tree's copy of this library carries (see fake_state.hpp).
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "fake_state.hpp"

namespace gpufrac::fake_nvml {

namespace {

constexpr char kMarker[] = "GPUFRAC-EMBEDDED-NVML-MACHINE:";
// Written after the marker by `gpufrac simulate init-root`: the machine's Inventory as JSON
// (core/inventory/inventory.hpp), NUL-terminated.
// volatile: the bytes in the installed file are read, never a folded constant.
__attribute__((used)) volatile const char g_embedded[65536] = "GPUFRAC-EMBEDDED-NVML-MACHINE:";

std::string embedded_text() {
  std::string s;
  for (std::size_t i = sizeof kMarker - 1; i < sizeof g_embedded && g_embedded[i] != '\0'; ++i) s += g_embedded[i];
  return s;
}

}  // namespace

Result<std::optional<SimulatedMachine>> embedded_machine() {
  const std::string text = embedded_text();
  if (text.empty()) return std::optional<SimulatedMachine>();
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return internal_error("the machine embedded in this library is not JSON");
  auto inv = inventory_from_json(json);
  if (!inv) return std::unexpected(inv.error());
  SimulatedMachine all{"<machine embedded in libnvidia-ml>", std::move(*inv), {}, {}};
  for (const Gpu& g : all.inventory.gpus) all.mig_profile_tables.push_back(g.mig_profiles);
  const SimulatedMachine* m = &all;
  SimulatedMachine visible = *m;
  visible.inventory.gpus.clear();
  visible.mig_profile_tables.clear();
  for (std::size_t i = 0; i < m->inventory.gpus.size(); ++i) {
    const Gpu& g = m->inventory.gpus[i];
    if (::access(text::cat("/dev/nvidia", g.minor).c_str(), F_OK) != 0) continue;
    visible.inventory.gpus.push_back(g);
    visible.inventory.gpus.back().index = static_cast<std::uint32_t>(visible.inventory.gpus.size() - 1);
    visible.mig_profile_tables.push_back(m->mig_profile_tables.at(i));
  }
  return std::optional<SimulatedMachine>(std::move(visible));
}

}  // namespace gpufrac::fake_nvml
