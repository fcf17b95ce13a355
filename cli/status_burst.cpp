#include "cli/status_burst.hpp"

#include <ctime>

#include <nlohmann/json.hpp>

#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

std::string gpu_name(const Inventory& inv, const std::string& uuid) {
  const Gpu* g = inv.gpu_by_uuid(uuid);
  return g != nullptr ? text::cat("GPU ", g->index) : uuid;
}

std::string clock_time(std::int64_t t) {
  char buf[32];
  const std::time_t tt = static_cast<std::time_t>(t);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&tt));
  return buf;
}

}  // namespace

std::uint64_t borrowed_bytes(const ShareStatus& s) {
  if (s.entry.limit_bytes == 0 || !s.used_bytes || *s.used_bytes <= s.entry.bytes) return 0;
  return *s.used_bytes - s.entry.bytes;
}

std::string used_text(const ShareStatus& s) {
  if (!s.used_bytes) return "-";
  const std::uint64_t borrowed = borrowed_bytes(s);
  return text::format_bytes(*s.used_bytes) +
         (borrowed != 0 ? " (" + text::format_bytes(borrowed) + " borrowed)" : std::string());
}

std::string swapped_text(const ShareStatus& s) {
  if (!s.swapped) return "";
  return text::cat("SWAPPED: ", s.entry.claim_owned() ? s.entry.claim : s.entry.container_id, " ",
                   text::format_bytes(s.swapped->bytes), " in host memory since ", clock_time(s.swapped->since),
                   ", for ", s.swapped->owner, "; it resumes when the GPU has room for it");
}

void add_burst_json(nlohmann::json& j, const ShareStatus& s) {
  if (s.entry.limit_bytes == 0) return;
  j["request_bytes"] = s.entry.bytes;
  j["limit_bytes"] = s.entry.limit_bytes;
  j["borrowed_bytes"] = s.used_bytes ? nlohmann::json(borrowed_bytes(s)) : nlohmann::json(nullptr);
}

nlohmann::json reclaims_json(const reclaim::ReclaimLog& log, const Inventory& inv, const ReclaimerState& reclaimer) {
  nlohmann::json events = nlohmann::json::array(), flags = nlohmann::json::array(), untold = nlohmann::json::array();
  std::uint64_t stopped = 0, refused = 0, swapped_out = 0;
  for (const auto& [gpu, n] : log.gpu_swap_outs) swapped_out += n;
  for (const auto& [gpu, n] : log.stopped) stopped += n;
  for (const auto& [gpu, n] : log.refused) refused += n;
  for (const auto& e : log.events) {
    const Gpu* g = inv.gpu_by_uuid(e.gpu_uuid);
    events.push_back({{"time", e.time},
                      {"gpu_uuid", e.gpu_uuid},
                      {"gpu_index", g != nullptr ? nlohmann::json(g->index) : nlohmann::json(nullptr)},
                      {"victim", e.victim},
                      {"pid", e.pid},
                      {"bytes", e.bytes},
                      {"owner", e.owner},
                      {"action", e.action},
                      {"reason", e.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.reason)}});
  }
  for (const auto& [key, f] : log.flags)
    flags.push_back({{"container", f.id},
                     {"gpu_uuid", f.gpu_uuid},
                     {"region_bytes", f.published},
                     {"driver_bytes", f.held},
                     {"since", f.since}});
  for (const auto& [key, u] : log.untold)
    untold.push_back({{"container", u.id}, {"gpu_uuid", u.gpu_uuid}, {"with", u.with}});
  return {{"reclaimer_pid", reclaimer.pid != 0 ? nlohmann::json(reclaimer.pid) : nlohmann::json(nullptr)},
          {"burst_reclaim", reclaimer.policy},
          {"stopped", stopped},
          {"refused", refused},
          {"swapped_out", swapped_out},
          {"events", events},
          {"flags", flags},
          {"untold", untold}};
}

std::string render_reclaims(const reclaim::ReclaimLog& log, const Inventory& inv, const ReclaimerState& reclaimer,
                            bool bursting) {
  std::string out;
  if (bursting)
    out += reclaimer.pid != 0
               ? text::cat("\nBurst reclaimer: pid ", reclaimer.pid, " (burst.reclaim: ", reclaimer.policy, ")\n")
               : "\nBurst reclaimer: not running; shares with a limit borrow nothing until one runs "
                 "(the next start, or gpufrac gc, starts it)\n";
  if (!log.events.empty() || !log.refused.empty()) out += "\nMemory lent and taken back (burst.reclaim)\n";
  for (const auto& e : log.events)
    out += text::cat("  ", clock_time(e.time), "  ", gpu_name(inv, e.gpu_uuid), ": ", e.action, " process ", e.pid,
                     " of ", e.victim, " (it held ", text::format_bytes(e.bytes), ")", e.owner.empty() ? "" : " for ",
                     e.owner, e.reason.empty() ? "" : "; swap not used: ", e.reason, "\n");
  for (const auto& [gpu, n] : log.refused)
    out +=
        text::cat("  ", gpu_name(inv, gpu), ": ", n, " request(s) for lent memory refused (burst.reclaim: refuse)\n");
  if (!log.flags.empty()) out += "\nUsage regions the driver contradicts (flagged; the driver's view decides)\n";
  for (const auto& [key, f] : log.flags)
    out +=
        text::cat("  ", f.id, " on ", gpu_name(inv, f.gpu_uuid), ": its region says ", text::format_bytes(f.published),
                  ", the driver sees ", text::format_bytes(f.held), " (since ", clock_time(f.since), ")\n");
  if (!log.untold.empty())
    out +=
        "\nShares that share a cgroup (the kernel cannot tell their processes apart: neither borrows, and "
        "nothing is taken back for either)\n";
  for (const auto& [key, u] : log.untold)
    out += text::cat("  ", u.id, " on ", gpu_name(inv, u.gpu_uuid), ": one cgroup with ", text::join(u.with, ", "),
                     "; its limit is its request\n");
  return out;
}

std::vector<metrics::Family> burst_families(const StatusReport& r, const reclaim::ReclaimLog& log,
                                            metrics::Labels (*labels)(const LedgerEntry&)) {
  using metrics::Family;
  using metrics::Type;
  Family request("gpufrac_share_request_bytes", Type::gauge, "Memory booked by one share (its request)");
  Family borrowed("gpufrac_share_borrowed_bytes", Type::gauge,
                  "Memory a share with a burst limit uses past its request (lent until its owners need it)");
  Family share_reclaims("gpufrac_share_reclaims_total", Type::counter,
                        "Processes of a share with a burst limit stopped to give lent memory back");
  Family gpu_reclaims("gpufrac_gpu_reclaims_total", Type::counter, "Borrowers' processes stopped on the GPU");
  Family refused("gpufrac_gpu_reclaims_refused_total", Type::counter,
                 "Requests for lent memory refused on the GPU (burst.reclaim: refuse)");
  Family swap_outs(
      "gpufrac_share_swap_outs_total", Type::counter,
      "Processes of a share with a burst limit swapped out to give lent memory back (burst.reclaim: swap)");
  Family swap_ins("gpufrac_share_swap_ins_total", Type::counter,
                  "Processes of a share with a burst limit swapped back in once the GPU had room");
  Family out_bytes("gpufrac_share_swapped_out_bytes_total", Type::counter,
                   "Bytes of a share's GPU memory the reclaimer moved to host memory");
  Family in_bytes("gpufrac_share_swapped_in_bytes_total", Type::counter,
                  "Bytes of a share's GPU memory the reclaimer moved back to the GPU");
  Family swapped("gpufrac_share_swapped_bytes", Type::gauge, "A share's GPU memory in host memory now (swapped out)");
  Family gpu_swaps("gpufrac_gpu_swap_outs_total", Type::counter, "Borrowers' processes swapped out on the GPU");
  auto count = [](const std::map<std::string, std::uint64_t>& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? std::uint64_t{0} : it->second;
  };
  auto add = [&](const ShareStatus& s) {
    request.add(labels(s.entry), s.entry.bytes);
    if (s.entry.limit_bytes == 0) return;
    if (s.used_bytes) borrowed.add(labels(s.entry), borrowed_bytes(s));
    const std::string key = container_key(s.entry);
    share_reclaims.add(labels(s.entry), count(log.share_stopped, key));
    swap_outs.add(labels(s.entry), count(log.swap_outs, key));
    swap_ins.add(labels(s.entry), count(log.swap_ins, key));
    out_bytes.add(labels(s.entry), count(log.swap_out_bytes, key));
    in_bytes.add(labels(s.entry), count(log.swap_in_bytes, key));
    swapped.add(labels(s.entry), s.swapped ? s.swapped->bytes : 0);
  };
  for (const auto& d : r.devices) {
    for (const auto& s : d.shares) add(s);
    if (d.mig || d.mig_mode) continue;
    if (!log.stopped.contains(d.uuid) && !log.refused.contains(d.uuid) && !log.gpu_swap_outs.contains(d.uuid)) continue;
    metrics::Labels l{{"gpu_index", text::cat(d.gpu_index)}, {"gpu_uuid", d.uuid}};
    gpu_reclaims.add(l, count(log.stopped, d.uuid));
    refused.add(l, count(log.refused, d.uuid));
    gpu_swaps.add(l, count(log.gpu_swap_outs, d.uuid));
  }
  for (const auto& s : r.unknown) add(s);
  return {request,  borrowed, share_reclaims, swap_outs, swap_ins, out_bytes,
          in_bytes, swapped,  gpu_reclaims,   refused,   gpu_swaps};
}

}  // namespace gpufrac::cli
