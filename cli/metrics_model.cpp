#include "cli/metrics_model.hpp"

#include <algorithm>
#include <set>

#include "cli/status_burst.hpp"
#include "core/enforcement/enforcement.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

using metrics::Family;
using metrics::Labels;
using metrics::Type;

Labels device_labels(const DeviceStatus& d, const std::string& gpu_uuid) {
  return {{"gpu_index", text::cat(d.gpu_index)}, {"gpu_uuid", gpu_uuid}, {"device_uuid", d.uuid}};
}

Labels share_labels(const LedgerEntry& e) {
  return {{"gpu_index", text::cat(e.gpu_index)},      {"gpu_uuid", e.gpu_uuid},     {"device_uuid", e.device_uuid},
          {"container_id", e.container_id},           {"device_key", e.device_key}, {"request", e.request},
          {"enforcement", to_string(share_holder(e))}};
}

// The devices that hold shares, with their GPU's UUID, and every share (unknown devices too).
std::vector<Family> memory_families(const StatusReport& r) {
  Family total("gpufrac_gpu_memory_total_bytes", Type::gauge, "Memory of a GPU (not in MIG mode) or MIG instance");
  Family reserved("gpufrac_gpu_memory_reserved_bytes", Type::gauge,
                  "Memory booked by shares (the sum of their limits)");
  Family free("gpufrac_gpu_memory_free_bytes", Type::gauge, "Memory a new share may still book (total x overcommit)");
  Family shares("gpufrac_gpu_shares", Type::gauge, "Bookings on the device");
  Family limit("gpufrac_share_limit_bytes", Type::gauge,
               "The most one share may use: its burst limit, else what it books");
  Family used("gpufrac_share_used_bytes", Type::gauge,
              "Memory the share's processes hold now (accounting region, or the driver where it holds the limit)");
  Family damaged("gpufrac_share_usage_region_damaged", Type::gauge,
                 "1 when the share's usage region cannot be believed (wrong size or header; see gpufrac status)");
  std::string gpu_uuid;
  auto add_share = [&](const ShareStatus& s) {
    limit.add(share_labels(s.entry), s.entry.limit());
    if (s.used_bytes) used.add(share_labels(s.entry), *s.used_bytes);
    damaged.add(share_labels(s.entry), s.region_damaged.empty() ? 0 : 1);
  };
  for (const auto& d : r.devices) {
    if (!d.mig) gpu_uuid = d.uuid;
    if (d.mig_mode) continue;
    total.add(device_labels(d, gpu_uuid), d.total);
    reserved.add(device_labels(d, gpu_uuid), d.reserved);
    free.add(device_labels(d, gpu_uuid), d.free);
    shares.add(device_labels(d, gpu_uuid), d.shares.size());
    for (const auto& s : d.shares) add_share(s);
  }
  for (const auto& s : r.unknown) add_share(s);
  return {total, reserved, free, shares, limit, used, damaged};
}

// The GPU's time: booked and free per GPU not in MIG mode, booked per share that holds a compute
// share, and what a share achieved over the last 10 s where the enforcing side knows it. Ratios of
// the whole GPU (ppm / 10^6).
std::vector<Family> compute_families(const StatusReport& r) {
  Family booked("gpufrac_gpu_compute_booked_ratio", Type::gauge,
                "Share of the GPU's time booked by its shares (1 = all of it)");
  Family free("gpufrac_gpu_compute_free_ratio", Type::gauge, "Share of the GPU's time a new share may still book");
  Family share("gpufrac_share_compute_booked_ratio", Type::gauge, "Share of the GPU's time booked by one share");
  Family achieved("gpufrac_share_compute_achieved_ratio", Type::gauge,
                  "Share of the GPU's time one share's work held over the last 10 s");
  Family tampered("gpufrac_gpu_compute_arbiter_tampered", Type::gauge,
                  "1 when the GPU's compute arbiter was tampered with (see gpufrac status)");
  Family tampering("gpufrac_share_compute_arbiter_tampering", Type::gauge,
                   "1 when gpufrac status names this share's container as the one that tampered with its GPU's "
                   "compute arbiter (its lane lied, or its lane file was changed)");
  auto ratio = [](std::uint64_t ppm) { return static_cast<double>(ppm) / kWholeGpuComputePpm; };
  auto add_share = [&](const ShareStatus& s) {
    if (s.entry.compute_ppm != 0) share.add_double(share_labels(s.entry), ratio(s.entry.compute_ppm));
    if (s.compute_achieved_ppm) achieved.add_double(share_labels(s.entry), ratio(*s.compute_achieved_ppm));
  };
  for (const auto& d : r.devices) {
    if (!d.mig && !d.mig_mode) {
      booked.add_double(device_labels(d, d.uuid), ratio(d.compute_booked));
      free.add_double(device_labels(d, d.uuid), ratio(d.compute_free));
      if (d.compute_booked != 0) tampered.add(device_labels(d, d.uuid), d.compute_tampered.empty() ? 0 : 1);
      for (const auto& s : d.shares)
        if (s.entry.compute_ppm != 0)
          tampering.add(share_labels(s.entry), d.compute_tampering_by(container_key(s.entry)) ? 1 : 0);
    }
    for (const auto& s : d.shares) add_share(s);
  }
  for (const auto& s : r.unknown) add_share(s);
  return {booked, free, share, achieved, tampered, tampering};
}

// SM sharing, on a node with a GPU in SM mode: per GPU, how its shares divide it, and per GPU in MPS
// mode its clients and whether its server is in FAULT. The SM percent booked is gpufrac_gpu_compute_booked_ratio there
// (a ratio of the SMs), per share gpufrac_share_compute_booked_ratio.
std::vector<Family> mps_families(const StatusReport& r) {
  Family mode("gpufrac_gpu_compute_mode", Type::gauge,
              "One per GPU not in MIG mode: how its shares divide it (mode: time, or sm for a GPU in MPS mode)");
  Family clients("gpufrac_gpu_mps_clients", Type::gauge, "MPS clients of a GPU in SM mode");
  Family fault("gpufrac_gpu_mps_server_fault", Type::gauge,
               "1 while the MPS server of a GPU in SM mode is in FAULT (a client's fatal fault), else 0");
  for (const auto& d : r.devices) {
    if (d.mig || d.mig_mode) continue;
    Labels l = device_labels(d, d.uuid);
    l.emplace_back("mode", d.sm_mode ? "sm" : "time");
    mode.add(std::move(l), 1);
    if (!d.sm_mode) continue;
    clients.add(device_labels(d, d.uuid), d.mps_clients);
    fault.add(device_labels(d, d.uuid), d.mps_state == "FAULT" ? 1 : 0);
  }
  return {mode, clients, fault};
}

Family gpu_info(const Inventory& inv) {
  Family f("gpufrac_gpu_info", Type::gauge, "One per GPU: its model and whether it is in MIG mode");
  for (const auto& g : inv.gpus)
    f.add({{"gpu_index", text::cat(g.index)},
           {"gpu_uuid", g.uuid},
           {"name", g.name},
           {"mig_mode", g.mig_enabled ? "true" : "false"}},
          1);
  return f;
}

// MIG instances of each GPU in MIG mode by state: in_use (booked), idle (a dynamic instance kept
// for reuse), free (neither).
Family mig_instances(const StatusReport& r) {
  Family f("gpufrac_mig_instances", Type::gauge, "MIG instances by state: in_use, idle (kept for reuse), free");
  for (std::size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceStatus& gpu = r.devices[i];
    if (gpu.mig || !gpu.mig_mode) continue;
    std::uint64_t in_use = 0, idle = 0, free = 0;
    for (std::size_t j = i + 1; j < r.devices.size() && r.devices[j].mig; ++j) {
      const DeviceStatus& m = r.devices[j];
      (!m.shares.empty() ? in_use : m.idle_s ? idle : free) += 1;
    }
    Labels l{{"gpu_index", text::cat(gpu.gpu_index)}, {"gpu_uuid", gpu.uuid}};
    for (auto [state, n] : {std::pair{"in_use", in_use}, {"idle", idle}, {"free", free}}) {
      Labels with = l;
      with.emplace_back("state", state);
      f.add(std::move(with), n);
    }
  }
  return f;
}

void add_histogram(Family& f, metrics::Labels labels, const metrics::Histogram& h) {
  std::vector<double> bounds(metrics::kLatencyBuckets.begin(), metrics::kLatencyBuckets.end());
  std::vector<std::uint64_t> buckets(h.buckets.begin(), h.buckets.end());
  f.add_histogram(std::move(labels), bounds, buckets, static_cast<double>(h.sum_ns) / 1e9);
}

std::vector<Family> counter_families(const metrics::CounterSnapshot& c) {
  using metrics::Frontend;
  using metrics::Refusal;
  using metrics::Timer;
  Family refusals("gpufrac_refusals_total", Type::counter, "Container starts refused, by front-end and reason");
  for (auto f : {Frontend::hook, Frontend::wrapper})
    for (auto r : {Refusal::capacity, Refusal::malformed, Refusal::host_pid, Refusal::other})
      refusals.add({{"frontend", to_string(f)}, {"reason", to_string(r)}},
                   c.refusals[static_cast<std::size_t>(f)][static_cast<std::size_t>(r)]);
  Family hook("gpufrac_hook_duration_seconds", Type::histogram,
              "gpufrac-hook run time for containers with a gpufrac request, by stage");
  for (auto [t, stage] : {std::pair{Timer::hook_prestart, "prestart"},
                          {Timer::hook_create_runtime, "createRuntime"},
                          {Timer::hook_poststop, "poststop"}})
    add_histogram(hook, {{"stage", stage}}, c.latency[static_cast<std::size_t>(t)]);
  Family wrapper("gpufrac_wrapper_duration_seconds", Type::histogram,
                 "gpufrac-runtime time from start to exec of the runtime, for creates with a gpufrac request");
  add_histogram(wrapper, {}, c.latency[static_cast<std::size_t>(Timer::wrapper_create)]);
  return {refusals, hook, wrapper};
}

}  // namespace

std::vector<Family> node_metrics(const NodeView& node, const metrics::CounterSnapshot& counters,
                                 std::string_view version) {
  std::vector<Family> out;
  out.push_back(Family("gpufrac_build_info", Type::gauge, "The gpufrac version serving these metrics")
                    .add({{"version", std::string(version)}}, 1));
  out.push_back(gpu_info(node.inventory));
  for (auto& f : memory_families(node.report)) out.push_back(std::move(f));
  for (auto& f : compute_families(node.report)) out.push_back(std::move(f));
  for (auto& f : burst_families(node.report, node.reclaims, share_labels)) out.push_back(std::move(f));
  out.push_back(mig_instances(node.report));
  const auto& devices = node.report.devices;
  if (std::any_of(devices.begin(), devices.end(), [](const DeviceStatus& d) { return d.sm_mode; }))
    for (auto& f : mps_families(node.report)) out.push_back(std::move(f));  // once a GPU is in SM mode
  for (auto& f : counter_families(counters)) out.push_back(std::move(f));
  out.push_back(
      Family("gpufrac_ledger_entries", Type::gauge, "Bookings in the ledger").add({}, node.ledger.entries.size()));
  out.push_back(
      Family("gpufrac_ledger_size_bytes", Type::gauge, "Size of ledger.json").add({}, node.ledger_file_bytes));
  return out;
}

}  // namespace gpufrac::cli
