#include "k8s/resource_slices.hpp"

#include <cstdio>

#include "core/quantity.hpp"
#include "core/text.hpp"
#include "k8s/dra_devices.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;

std::string counter_set(const Gpu& g) {
  return text::cat("gpu-", g.index, "-counters");
}

json quantity(std::uint64_t bytes) {
  return {{"value", k8s_quantity(bytes)}};
}

// "8.0" -> "8.0.0": DRA version attributes are semantic versions.
std::string semver(int major, int minor) {
  return text::cat(major, ".", minor, ".0");
}

json counter_sets(const std::vector<const Gpu*>& gpus) {
  json sets = json::array();
  for (const Gpu* g : gpus) {
    json counters = {{"memory", quantity(g->memory_bytes)}};
    for (std::uint32_t s = 0; s < g->memory_slices(); ++s) counters[text::cat("memory-slice-", s)] = {{"value", "1"}};
    sets.push_back({{"name", counter_set(*g)}, {"counters", std::move(counters)}});
  }
  return sets;
}

// The `fraction` capacity (parts per million of the GPU): any count from 1 to 1M, so that four
// quarters (250k) or eight eighths (125k) fit every GPU whatever its memory. A claim that names only
// memory consumes the default, 1. "1M" is kWholeGpuPpm as the API server writes it back (canonical),
// so the publisher finds what it sent.
json fraction_capacity() {
  static_assert(kWholeGpuPpm == 1'000'000);
  return {{"value", "1M"},
          {"requestPolicy", {{"default", "1"}, {"validRange", {{"min", "1"}, {"max", "1M"}, {"step", "1"}}}}}};
}

// The GPU's time in percent (k8s/dra_devices.hpp kComputeCapacity): a claim may ask for 1 to 100;
// one that does not consumes 0 here and prepare books its default share (the memory share).
json compute_capacity() {
  return {{"value", text::cat(kComputeCapacity)},
          {"requestPolicy",
           {{"default", "0"}, {"validRange", {{"min", "0"}, {"max", text::cat(kComputeCapacity)}, {"step", "1"}}}}}};
}

json gpu_device(const DraDevice& d, const Inventory& inv, std::uint64_t step) {
  const Gpu& g = *d.gpu;
  json attrs = {{"type", {{"string", "gpu"}}},
                {"uuid", {{"string", g.uuid}}},
                {"productName", {{"string", g.name.substr(0, 64)}}},
                {"index", {{"int", g.index}}},
                {"cudaComputeCapability", {{"version", semver(g.cc_major, g.cc_minor)}}},
                {"migCapable", {{"bool", g.mig_capable}}}};
  if (std::count(inv.driver_version.begin(), inv.driver_version.end(), '.') == 2)
    attrs["driverVersion"] = {{"version", inv.driver_version}};
  const std::uint64_t max = g.memory_bytes / step * step;
  json capacity = {{"value", k8s_quantity(g.memory_bytes)}};
  if (max >= step && g.memory_bytes >= 2 * step)
    capacity["requestPolicy"] = {
        {"default", k8s_quantity(step)},
        {"validRange", {{"min", k8s_quantity(step)}, {"max", k8s_quantity(max)}, {"step", k8s_quantity(step)}}}};
  return {
      {"name", d.name},
      {"allowMultipleAllocations", true},
      {"attributes", std::move(attrs)},
      {"capacity",
       {{"memory", std::move(capacity)}, {kFractionCapacity, fraction_capacity()}, {"compute", compute_capacity()}}},
      {"consumesCounters",
       json::array({{{"counterSet", counter_set(g)}, {"counters", {{"memory", quantity(g.memory_bytes)}}}}})}};
}

// What a MIG device takes of each memory slice of its GPU instance: all of it ("1") for the whole
// GPU instance, C/G of it for a compute instance of C of the GPU instance's G compute slices
// ("333m"), rounded down: the compute instances of one GPU instance fit together, a whole GPU
// instance at an overlapping placement fits beside none of them.
std::string slice_share(const DraDevice& d) {
  const auto [c, g] = d.compute_share();
  if (c >= g || g == 0) return "1";
  return text::cat(1000 * c / g, "m");
}

// A MIG device: an existing instance, or (dynamic MIG) a profile at a placement that prepare makes,
// or a compute instance of one.
json mig_device(const DraDevice& d) {
  const Gpu& g = *d.gpu;
  const MigPlacement placement = d.mig ? d.mig->placement : MigPlacement{d.placement_start, d.profile->memory_slices};
  json counters = {{"memory", quantity(d.memory_bytes())}};
  for (std::uint32_t s = placement.start; s < placement.start + placement.size; ++s)
    counters[text::cat("memory-slice-", s)] = {{"value", slice_share(d)}};
  json attrs = {{"type", {{"string", "mig"}}},
                {"profile", {{"string", d.device_profile()}}},
                {"parentUUID", {{"string", g.uuid}}},
                {"index", {{"int", g.index}}},
                {"placementStart", {{"int", placement.start}}},
                {"computeSlices", {{"int", d.compute_share().first}}}};
  const std::uint32_t sms = d.mig ? d.mig->multiprocessors : d.ci ? d.ci->multiprocessors : d.profile->multiprocessors;
  if (sms != 0) attrs["multiprocessors"] = {{"int", sms}};
  if (d.mig) {
    attrs["uuid"] = {{"string", d.mig->uuid}};
    attrs["gi"] = {{"int", d.mig->gi_id}};
    attrs["ci"] = {{"int", d.mig->ci_id}};
  } else {
    attrs["profileID"] = {{"int", d.profile->id}};
  }
  return {{"name", d.name},
          {"attributes", std::move(attrs)},
          {"capacity", {{"memory", quantity(d.memory_bytes())}}},
          {"consumesCounters", json::array({{{"counterSet", counter_set(g)}, {"counters", std::move(counters)}}})}};
}

json slice(const SliceOptions& o, std::size_t index, std::size_t count, const char* key, json items) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%05zx", index);
  json metadata = {{"generateName", text::cat(prefix, "-", kDriverName, "-", o.node, "-")}};
  if (!o.node_uid.empty())
    metadata["ownerReferences"] = json::array(
        {{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", o.node}, {"uid", o.node_uid}, {"controller", true}}});
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", std::move(metadata)},
          {"spec",
           {{"driver", kDriverName},
            {"nodeName", o.node},
            {"pool", {{"name", o.node}, {"generation", o.generation}, {"resourceSliceCount", count}}},
            {key, std::move(items)}}}};
}

}  // namespace

std::vector<json> render_resource_slices(const Inventory& inventory, const SliceOptions& o) {
  std::vector<json> sets, devices;
  std::vector<const Gpu*> gpus;
  for (const auto& g : inventory.gpus) gpus.push_back(&g);
  for (std::size_t i = 0; i < gpus.size(); i += kMaxCounterSetsPerSlice)
    sets.push_back(
        counter_sets({gpus.begin() + static_cast<std::ptrdiff_t>(i),
                      gpus.begin() + static_cast<std::ptrdiff_t>(std::min(gpus.size(), i + kMaxCounterSetsPerSlice))}));
  json current = json::array();
  for (const auto& d : dra_devices(inventory, o.mig)) {
    current.push_back(d.whole() ? mig_device(d) : gpu_device(d, inventory, o.share_step));
    if (current.size() == kMaxDevicesPerSlice) devices.push_back(std::exchange(current, json::array()));
  }
  if (!current.empty()) devices.push_back(std::move(current));
  const std::size_t count = sets.size() + devices.size();
  std::vector<json> out;
  for (auto& s : sets) out.push_back(slice(o, out.size(), count, "sharedCounters", std::move(s)));
  for (auto& d : devices) out.push_back(slice(o, out.size(), count, "devices", std::move(d)));
  return out;
}

}  // namespace gpufrac::dra
