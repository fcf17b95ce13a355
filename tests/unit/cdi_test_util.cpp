#include "cdi_test_util.hpp"

#include <gtest/gtest.h>

#include "core/fs.hpp"
#include "nvml/device_nodes.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::test {

Inventory machine_inventory(const std::string& file) {
  auto m = load_simulated_machine(source_path("nvml/machines/" + file));
  EXPECT_TRUE(m) << m.error().message;
  if (!m) return {};
  HostDriverFiles files;
  files.nvidia_major = m->majors.nvidia;
  files.uvm_major = m->majors.nvidia_uvm;
  files.caps_major = m->majors.nvidia_caps;
  files.mig_minors = parse_mig_minors(simulated_mig_minors(*m));
  Inventory inv = m->inventory;
  attach_device_nodes(inv, files);
  return inv;
}

Config golden_config() {
  auto text = fs::read_file(source_path("tests/fixtures/cdi/config.yaml"));
  EXPECT_TRUE(text) << text.error().message;
  auto cfg = load_config_string(text ? *text : "", "/etc/gpufrac/config.yaml");
  EXPECT_TRUE(cfg) << cfg.error().message;
  return cfg ? *cfg : default_config();
}

}  // namespace gpufrac::test
