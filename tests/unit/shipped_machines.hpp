// The simulated machines shipped in nvml/machines (the demo's and the end-to-end tests'), for unit
// tests that run on every one of them or on one by name.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/inventory/inventory.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::test {

inline std::string shipped_machines_dir() {
  return std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines";
}

// The inventory of nvml/machines/<file>; with_cap_nodes gives every MIG instance a capability
// node, as discovery attaches them.
inline Inventory shipped_machine(const std::string& file, bool with_cap_nodes = false) {
  auto m = load_simulated_machine(shipped_machines_dir() + "/" + file);
  EXPECT_TRUE(m) << file << ": " << (m ? "" : m.error().message);
  if (!m) return Inventory{};
  if (with_cap_nodes)
    for (auto& g : m->inventory.gpus)
      for (auto& i : g.mig_instances) i.cap_nodes = {DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap30", 509, 30}};
  return m->inventory;
}

// Every shipped machine file's name, sorted.
inline std::vector<std::string> shipped_machine_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(shipped_machines_dir()))
    if (e.path().extension() == ".yaml") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpufrac::test
