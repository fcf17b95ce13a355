// The provisioner's test fixture: the real NVML backend over the fake libnvidia-ml.so.1 with its
// state in a file, a simulated host root, dynamic MIG, a CDI spec (mig_provision_test.cpp,
// mig_provision_ci_test.cpp).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cdi/spec_write.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger_mig.hpp"
#include "core/mig/mig_device.hpp"
#include "core/mig/mig_plan.hpp"
#include "core/text.hpp"
#include "nvml/discover.hpp"
#include "nvml/mig_provision.hpp"
#include "nvml/mig_reclaim.hpp"
#include "nvml/mig_steps.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::test {

inline const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";

class MigProvision : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufrac-mig-provision-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    use_machine("a100-40gb-mig-empty.yaml");
  }
  void TearDown() override {
    for (const char* v : {"GPUFRAC_FAKE_NVML_MACHINE", "GPUFRAC_FAKE_NVML_STATE", "GPUFRAC_FAKE_NVML_FAIL"})
      ::unsetenv(v);
    std::filesystem::remove_all(dir_);
  }
  void use_machine(const std::string& machine, const std::string& extra = "") {
    std::filesystem::remove(dir_ + "/fake-state.json");  // another machine starts from its file
    ::setenv("GPUFRAC_FAKE_NVML_MACHINE", (kMachines + machine).c_str(), 1);
    ::setenv("GPUFRAC_FAKE_NVML_STATE", (dir_ + "/fake-state.json").c_str(), 1);
    auto m = load_simulated_machine(kMachines + machine);
    ASSERT_TRUE(m);
    ASSERT_TRUE(write_simulated_host_root(*m, dir_ + "/root", false));
    auto cfg = load_config_string(
        text::cat("state-dir: ", dir_, "/state\nhost-root: ", dir_, "/root\nnvml: {backend: nvml, library: ",
                  GPUFRAC_FAKE_NVML, "}\nmig: {mode: dynamic", extra, "}\ncdi: {output: ", dir_,
                  "/cdi/gpufrac.yaml}\nhook: {path: /usr/bin/gpufrac-hook}\ndriver: {inject: never}\n"),
        "test.yaml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    cfg_ = *cfg;
    ASSERT_TRUE(rediscover_mig(cfg_));
  }
  Result<ProvisionResult> provision(const std::string& id, const std::string& profile) {
    return provision_request(id, {{"gpufrac.io/mig-profile", profile}});
  }
  Result<ProvisionResult> provision_request(const std::string& id, const Annotations& a) {
    auto r = parse_request(a, true);
    EXPECT_TRUE(r && *r) << (r ? "no request" : r.error().message);
    ReserveArgs args{id, "", **r, BookingSource::hook, ::getpid(), std::nullopt};
    return provision_mig(cfg_, args, cdi::spec_refresher(cfg_));
  }
  // "1g.5gb@0 ..." as NVML has it now.
  std::string layout() {
    auto inv = discover(cfg_);
    EXPECT_TRUE(inv) << inv.error().message;
    std::vector<std::pair<std::uint32_t, std::string>> all;
    for (const auto& m : inv->gpus[0].mig_instances)
      all.emplace_back(
          m.placement.start * 8 + m.ci_start,
          placement_text(mig_device_profile(inv->gpus[0], m), m.placement) +
              (m.compute_slices < inv->gpus[0].profile_by_id(m.profile_id)->compute_slices ? text::cat(":", m.ci_start)
                                                                                           : ""));
    std::sort(all.begin(), all.end());
    std::vector<std::string> out;
    for (auto& [s, t] : all) out.push_back(t);
    return text::join(out, " ");
  }
  std::string dir_;
  Config cfg_;
};

}  // namespace gpufrac::test
