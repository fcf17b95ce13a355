// What a percent of compute is on MIG (core/mig/mig_device.hpp): a share of the SMs of the GPU's full
// profile, mapped to the smallest whole GPU instance with them on every shipped machine (A100: the
// 7g's 98 SMs, not the 108 the GPU has without MIG; H100: the uneven 16/26/32/60/64/132), device
// profile names, the equal split of a GPU instance's memory, and what discovery keeps learned.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/mig/mig_device.hpp"
#include "core/mig/mig_fit.hpp"
#include "core/text.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";

// "1-14 1g.5gb (14), 15-28 2g.10gb (28), ...": the whole GPU instance memory 1Mi with compute p
// takes first, for p = 1..100.
std::string percent_map(const Gpu& g) {
  std::vector<std::string> out;
  std::string last;
  std::uint32_t from = 1;
  auto flush = [&](std::uint32_t to) {
    if (!last.empty()) out.push_back(text::cat(from, "-", to, " ", last));
  };
  for (std::uint32_t p = 1; p <= 100; ++p) {
    Request r;
    r.kind = SizeKind::memory;
    r.memory_bytes = kMiB;
    r.compute_ppm = p * 10'000;
    std::string first = "none";
    for (const MigCandidate& c : mig_candidates(r, g))
      if (c.shape.full()) {
        first = text::cat(c.shape.name(), " (", c.shape.ci.multiprocessors, ")");
        break;
      }
    if (first != last) {
      flush(p - 1);
      last = first;
      from = p;
    }
  }
  flush(100);
  return text::join(out, ", ");
}

TEST(MigDevice, PercentToProfileOnEveryShippedMachine) {
  const std::map<std::string, std::string> expected{
      {"a100-40gb",
       "1-14 1g.5gb (14), 15-28 2g.10gb (28), 29-42 3g.20gb (42), 43-57 4g.20gb (56), 58-100 7g.40gb (98)"},
      {"a100-80gb",
       "1-14 1g.10gb (14), 15-28 2g.20gb (28), 29-42 3g.40gb (42), 43-57 4g.40gb (56), 58-100 7g.80gb (98)"},
      {"h100-80gb",
       "1-12 1g.10gb (16), 13-19 1g.20gb (26), 20-24 2g.20gb (32), 25-45 3g.40gb (60), 46-48 4g.40gb (64), "
       "49-100 7g.80gb (132)"}};
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(kMachines)) {
    auto m = load_simulated_machine(e.path());
    ASSERT_TRUE(m) << m.error().message;
    for (std::size_t i = 0; i < m->inventory.gpus.size(); ++i) {
      Gpu g = m->inventory.gpus[i];
      g.mig_profiles = m->mig_profile_tables[i];  // what the GPU offers once in MIG mode
      if (g.mig_profiles.empty()) continue;
      const std::string set = g.mig_profiles[0].multiprocessors == 16 ? "h100-80gb"
                              : g.mig_profiles[0].memory_mib == 4864  ? "a100-40gb"
                                                                      : "a100-80gb";
      EXPECT_EQ(percent_map(g), expected.at(set)) << e.path() << " GPU " << i;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 19);  // every MIG-capable GPU of the nine machines
}

TEST(MigDevice, PercentIsOfTheFullProfilesSms) {
  auto a100 = load_simulated_machine(kMachines + "a100-40gb-mig-empty.yaml");
  auto h100 = load_simulated_machine(kMachines + "h100-80gb-mig-empty.yaml");
  ASSERT_TRUE(a100 && h100);
  Gpu a = a100->inventory.gpus[0], h = h100->inventory.gpus[0];
  EXPECT_EQ(full_multiprocessors(a), 98u);  // the 7g: MIG never uses 10 of the A100's 108 SMs
  EXPECT_EQ(full_multiprocessors(h), 132u);
  EXPECT_EQ(multiprocessors_for(a, 400'000), 40u);  // ceil(39.2)
  EXPECT_EQ(multiprocessors_for(a, 1'000'000), 98u);
  EXPECT_EQ(multiprocessors_for(h, 400'000), 53u);  // ceil(52.8)
  EXPECT_EQ(compute_ppm_of(a, 14), 142'857u);       // one slice of an A100: 14.2857 %
  EXPECT_EQ(compute_ppm_of(h, 60), 454'545u);       // an H100 3g.40gb: 45.4545 %
  EXPECT_EQ(compute_ppm_of(h, 132), 1'000'000u);
}

TEST(MigDevice, NamesSplitsAndUnknownTables) {
  auto m = load_simulated_machine(kMachines + "h100-80gb-mig-empty.yaml");
  ASSERT_TRUE(m);
  Gpu g = m->inventory.gpus[0];
  g.mig_profiles = m->mig_profile_tables[0];
  const MigProfile& p3 = *g.profile_by_name("3g.40gb");
  EXPECT_EQ(mig_device_profile_name(p3, 1), "1c.3g.40gb");
  EXPECT_EQ(mig_device_profile_name(p3, 3), "3g.40gb");
  auto one = mig_shape_named(g, "1c.3g.40gb");
  ASSERT_TRUE(one);
  EXPECT_TRUE(one->known());
  EXPECT_EQ(one->ci.multiprocessors, 16u);
  EXPECT_EQ(equal_split_bytes(*one), 13482 * kMiB);  // 40448 MiB / 3, whole MiB
  EXPECT_EQ(equal_split_bytes(*mig_shape_named(g, "2c.3g.40gb")), 26965 * kMiB);
  EXPECT_EQ(equal_split_bytes(*mig_shape_named(g, "3g.40gb")), 40448 * kMiB);
  // Without NVML's answer for a GPU instance of 3g.40gb: what go-nvlib's rule allows, SMs unknown.
  Gpu bare = m->inventory.gpus[0];  // the inventory as NVML reports it with no GPU instance
  ASSERT_TRUE(bare.profile_by_name("3g.40gb")->compute_profiles.empty());
  auto guess = mig_shape_named(bare, "1c.3g.40gb");
  ASSERT_TRUE(guess);
  EXPECT_FALSE(guess->known());
  EXPECT_EQ(guess->ci.multiprocessors, 0u);
  EXPECT_FALSE(mig_shape_named(bare, "3c.4g.40gb"));  // 2 x 3 > 4 + 1: NVML offers no 3c in a 4g
  EXPECT_EQ(full_compute_profile(*bare.profile_by_name("3g.40gb")).multiprocessors, 60u);
  // Discovery keeps a table an earlier GPU instance taught, for the same GPU and profile.
  Inventory fresh, previous;
  fresh.gpus.push_back(bare);
  previous.gpus.push_back(g);
  learn_compute_profiles(fresh, previous);
  EXPECT_EQ(fresh.gpus[0].profile_by_name("3g.40gb")->compute_profiles, p3.compute_profiles);
  previous.gpus[0].uuid = "GPU-00000000-0000-0000-0000-000000000000";
  fresh.gpus[0] = bare;
  learn_compute_profiles(fresh, previous);
  EXPECT_TRUE(fresh.gpus[0].profile_by_name("3g.40gb")->compute_profiles.empty());
}

}  // namespace
}  // namespace gpufrac
