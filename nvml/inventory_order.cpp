#include "nvml/inventory_order.hpp"

#include <algorithm>
#include <tuple>

namespace gpufrac {

void canonical_order(Gpu& gpu) {
  auto profile_key = [](const MigProfile& p) { return std::tuple(p.memory_slices, p.compute_slices, p.index); };
  std::sort(gpu.mig_profiles.begin(), gpu.mig_profiles.end(),
            [&](const MigProfile& a, const MigProfile& b) { return profile_key(a) < profile_key(b); });
  for (auto& p : gpu.mig_profiles) std::sort(p.placement_starts.begin(), p.placement_starts.end());
  std::sort(gpu.mig_instances.begin(), gpu.mig_instances.end(), [](const MigInstance& a, const MigInstance& b) {
    return std::tie(a.gi_id, a.ci_id) < std::tie(b.gi_id, b.ci_id);
  });
}

}  // namespace gpufrac
