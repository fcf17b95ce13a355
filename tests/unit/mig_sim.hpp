// A simulated dynamic-MIG GPU for planner tests: a Gpu whose GPU and compute instances change as
// plans are applied, the bookings on them, the idle records and the compute instances gpufrac
// made. Independent of the provisioner: it only follows plans.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/mig/mig_device.hpp"
#include "core/mig/mig_plan.hpp"
#include "core/mig/mig_profile_name.hpp"
#include "core/text.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::test {

// GPU 0 of a shipped machine, with its whole profile tables (compute instance profiles included,
// as a node knows them once NVML answered for a GPU instance of each profile).
inline Gpu sim_gpu(const std::string& machine) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/" + machine);
  EXPECT_TRUE(m) << m.error().message;
  Gpu g = m->inventory.gpus.at(0);
  if (g.mig_enabled) g.mig_profiles = m->mig_profile_tables.at(0);
  for (auto& i : g.mig_instances) i.cap_nodes = {DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap30", 509, 30}};
  return g;
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

inline Request with_compute(Request r, std::uint32_t percent) {
  r.compute_ppm = percent * 10'000;
  return r;
}

struct SimGpu {
  Gpu gpu;
  std::vector<LedgerEntry> live;
  std::vector<MigIdleRecord> idle;
  std::vector<std::string> made;  // compute instances the plans made
  int serial = 0;

  explicit SimGpu(Gpu g) : gpu(std::move(g)) {}

  MigGpuView view() const { return mig_view(gpu, live, idle, {}, made); }

  const MigInstance* instance(const std::string& uuid) const {
    for (const auto& m : gpu.mig_instances)
      if (m.uuid == uuid) return &m;
    return nullptr;
  }

  void book(const std::string& uuid, const std::string& container, std::uint64_t bytes = 0) {
    LedgerEntry e;
    e.container_id = container;
    e.device_uuid = uuid;
    e.gpu_uuid = gpu.uuid;
    e.pid = 1;
    e.bytes = bytes;
    if (const MigInstance* m = instance(uuid)) e.mig = MigRef{m->gi_id, m->ci_id, mig_device_profile(gpu, *m)};
    live.push_back(e);
    std::erase_if(idle, [&](const MigIdleRecord& r) { return r.uuid == uuid; });
  }

  // Adds a compute instance of `slices` (0: the full one) to GPU instance `gi` of `profile` at `start`
  // (created when missing; GI id: smallest free from 1), at compute slice `ci_start`; returns its uuid.
  std::string add_ci(const std::string& profile, std::uint32_t start, std::uint32_t slices, std::uint32_t ci_start,
                     std::optional<std::uint32_t> gi = std::nullopt) {
    const MigProfile* p = gpu.profile_by_name(profile);
    EXPECT_NE(p, nullptr) << profile;
    std::uint32_t id = gi.value_or(1);
    while (!gi && std::any_of(gpu.mig_instances.begin(), gpu.mig_instances.end(),
                              [&](const MigInstance& m) { return m.gi_id == id; }))
      ++id;
    std::uint32_t ci = 0;
    while (std::any_of(gpu.mig_instances.begin(), gpu.mig_instances.end(),
                       [&](const MigInstance& m) { return m.gi_id == id && m.ci_id == ci; }))
      ++ci;
    const std::uint32_t c = slices == 0 ? p->compute_slices : slices;
    MigComputeProfile cp = full_compute_profile(*p);
    for (const auto& x : p->compute_profiles)
      if (x.slices == c) cp = x;
    MigInstance m;
    m.gi_id = id;
    m.ci_id = ci;
    m.profile_id = p->id;
    m.profile_name = p->name;
    m.uuid = text::cat("MIG-00000000-0000-0000-0000-", 100000000000 + ++serial);
    m.memory_bytes = p->memory_mib * kMiB;
    m.placement = {start, p->memory_slices};
    m.compute_slices = c;
    m.ci_profile_id = cp.id;
    m.ci_start = ci_start;
    m.multiprocessors = cp.multiprocessors;
    m.cap_nodes = {DeviceNodeInfo{"/dev/nvidia-caps/nvidia-cap30", 509, 30}};
    gpu.mig_instances.push_back(m);
    return m.uuid;
  }

  // A GPU instance with its full-size compute instance, as the provisioner makes one.
  std::string add(const std::string& profile, std::uint32_t start) { return add_ci(profile, start, 0, 0); }

  // Follows a plan for `container`; returns the uuid it books.
  std::string apply(const MigPlan& plan, const std::string& container) {
    std::string uuid = plan.reuse_uuid;
    if (!plan.reuse()) {
      for (const auto& d : plan.destroy) destroy(d);
      const MigCreateStep& c = plan.create;
      EXPECT_TRUE(c.ci_start.has_value()) << "the tables are known: the plan places the compute instance";
      uuid = add_ci(c.profile_name, c.placement.start, c.ci_slices, c.ci_start.value_or(0), c.gi);
      made.push_back(uuid);
    }
    book(uuid, container, plan.bytes);
    return uuid;
  }

  void destroy(const MigDestroyStep& d) {
    for (const auto& m : gpu.mig_instances) {
      if (m.gi_id != d.gi) continue;
      EXPECT_FALSE(std::any_of(live.begin(), live.end(), [&](const LedgerEntry& e) { return e.device_uuid == m.uuid; }))
          << "the plan destroys a booked instance " << m.uuid;
      const bool split = m.compute_slices < gpu.profile_by_id(m.profile_id)->compute_slices;
      EXPECT_TRUE(!split || std::find(made.begin(), made.end(), m.uuid) != made.end())
          << "the plan destroys a compute instance gpufrac did not make " << m.uuid;
      std::erase_if(idle, [&](const MigIdleRecord& r) { return r.uuid == m.uuid; });
    }
    std::erase_if(gpu.mig_instances, [&](const MigInstance& m) { return m.gi_id == d.gi; });
  }

  void release(std::string uuid, std::int64_t now) {  // by value: callers pass a live entry's uuid
    std::erase_if(live, [&](const LedgerEntry& e) { return e.device_uuid == uuid; });
    idle.push_back(MigIdleRecord{uuid, gpu.uuid, now});
  }

  // "1g.5gb@0 2g.10gb@2 1c.3g.20gb@4:0 ...": the instances by placement, then compute slice.
  std::string layout() const {
    std::vector<const MigInstance*> all;
    for (const auto& m : gpu.mig_instances) all.push_back(&m);
    std::sort(all.begin(), all.end(), [](const MigInstance* a, const MigInstance* b) {
      return std::tie(a->placement.start, a->ci_start) < std::tie(b->placement.start, b->ci_start);
    });
    std::vector<std::string> parts;
    for (const auto* m : all) {
      const std::string name = mig_device_profile(gpu, *m);
      parts.push_back(placement_text(name, m->placement) +
                      (name == m->profile_name ? "" : text::cat(":", m->ci_start)));
    }
    return text::join(parts, " ");
  }
};

}  // namespace gpufrac::test
