// A simulated dynamic-MIG GPU for planner tests: a Gpu whose instances change as plans are applied,
// the bookings on them and the idle records. Independent of the provisioner: it only follows plans.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/mig_plan.hpp"
#include "core/mig_profile_name.hpp"
#include "core/text.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::test {

inline Gpu sim_gpu(const std::string& machine) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/" + machine);
  EXPECT_TRUE(m) << m.error().message;
  return m->inventory.gpus.at(0);
}

inline Request profile_request(const std::string& name) {
  Request r;
  r.kind = SizeKind::mig_profile;
  r.mig_profile = *canonical_mig_profile(name);
  return r;
}

inline Request fraction_request(Ppm f) {
  Request r;
  r.fraction = f;
  return r;
}

inline Request memory_request(std::uint64_t bytes) {
  Request r;
  r.kind = SizeKind::memory;
  r.memory_bytes = bytes;
  return r;
}

struct SimGpu {
  Gpu gpu;
  std::vector<LedgerEntry> live;
  std::vector<MigIdleRecord> idle;
  int serial = 0;

  explicit SimGpu(Gpu g) : gpu(std::move(g)) {}

  MigGpuView view() const { return mig_view(gpu, live, idle); }

  const MigInstance* instance(const std::string& uuid) const {
    for (const auto& m : gpu.mig_instances)
      if (m.uuid == uuid) return &m;
    return nullptr;
  }

  void book(const std::string& uuid, const std::string& container) {
    LedgerEntry e;
    e.container_id = container;
    e.device_uuid = uuid;
    e.gpu_uuid = gpu.uuid;
    e.pid = 1;
    live.push_back(e);
    std::erase_if(idle, [&](const MigIdleRecord& r) { return r.uuid == uuid; });
  }

  // Adds an instance as the provisioner would (GI id: smallest free from 1), returns its uuid.
  std::string add(const std::string& profile, std::uint32_t start) {
    const MigProfile* p = gpu.profile_by_name(profile);
    EXPECT_NE(p, nullptr) << profile;
    std::uint32_t gi = 1;
    while (std::any_of(gpu.mig_instances.begin(), gpu.mig_instances.end(),
                       [&](const MigInstance& m) { return m.gi_id == gi; }))
      ++gi;
    MigInstance m;
    m.gi_id = gi;
    m.profile_id = p->id;
    m.profile_name = p->name;
    m.uuid = text::cat("MIG-00000000-0000-0000-0000-", 100000000000 + ++serial);
    m.memory_bytes = p->memory_mib * kMiB;
    m.placement = {start, p->memory_slices};
    m.compute_slices = p->compute_slices;
    m.cap_nodes = {DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap30", 509, 30}};
    gpu.mig_instances.push_back(m);
    return m.uuid;
  }

  // Follows a plan for `container`; returns the uuid it books.
  std::string apply(const MigPlan& plan, const std::string& container) {
    std::string uuid = plan.reuse_uuid;
    if (!plan.reuse()) {
      for (const auto& d : plan.destroy) {
        for (const auto& u : d.uuids) {
          EXPECT_FALSE(std::any_of(live.begin(), live.end(), [&](const LedgerEntry& e) { return e.device_uuid == u; }))
              << "the plan destroys a booked instance " << u;
          std::erase_if(idle, [&](const MigIdleRecord& r) { return r.uuid == u; });
        }
        std::erase_if(gpu.mig_instances, [&](const MigInstance& m) { return m.gi_id == d.gi; });
      }
      uuid = add(plan.create.profile_name, plan.create.placement.start);
    }
    book(uuid, container);
    return uuid;
  }

  void release(std::string uuid, std::int64_t now) {  // by value: callers pass a live entry's uuid
    std::erase_if(live, [&](const LedgerEntry& e) { return e.device_uuid == uuid; });
    idle.push_back(MigIdleRecord{uuid, gpu.uuid, now});
  }

  // "1g.5gb@0 2g.10gb@2 ...": the instances by placement.
  std::string layout() const {
    std::vector<const MigInstance*> all;
    for (const auto& m : gpu.mig_instances) all.push_back(&m);
    std::sort(all.begin(), all.end(),
              [](const MigInstance* a, const MigInstance* b) { return a->placement.start < b->placement.start; });
    std::vector<std::string> parts;
    for (const auto* m : all) parts.push_back(placement_text(m->profile_name, m->placement));
    return text::join(parts, " ");
  }
};

}  // namespace gpufrac::test
