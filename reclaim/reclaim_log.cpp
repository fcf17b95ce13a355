#include "reclaim/reclaim_log.hpp"

#include <array>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"

namespace gpufrac::reclaim {

using nlohmann::json;

namespace {

json event_json(const ReclaimEvent& e) {
  json j{{"time", e.time},   {"gpu", e.gpu_uuid}, {"victim", e.victim}, {"pid", e.pid},
         {"bytes", e.bytes}, {"owner", e.owner},  {"action", e.action}};
  if (!e.reason.empty()) j["reason"] = e.reason;
  return j;
}

ReclaimEvent event_of(const json& j) {
  ReclaimEvent e{j.at("time").get<std::int64_t>(),   j.at("gpu").get<std::string>(),
                 j.at("victim").get<std::string>(),  j.at("pid").get<std::int64_t>(),
                 j.at("bytes").get<std::uint64_t>(), j.at("owner").get<std::string>()};
  if (j.contains("action")) e.action = j.at("action").get<std::string>();  // written since swap
  if (j.contains("reason")) e.reason = j.at("reason").get<std::string>();
  return e;
}

using Counts = std::map<std::string, std::uint64_t>;
constexpr const char* kSwapCounts[] = {"swap_outs", "swap_ins", "swap_out_bytes", "swap_in_bytes", "gpu_swap_outs"};

template <class Log>
auto swap_counts(Log& log) {
  return std::array{&log.swap_outs, &log.swap_ins, &log.swap_out_bytes, &log.swap_in_bytes, &log.gpu_swap_outs};
}

}  // namespace

std::string reclaim_log_path(const Config& cfg) {
  return cfg.state_dir + "/reclaims.json";
}

Result<ReclaimLog> load_reclaim_log(const std::string& path) {
  if (!fs::exists(path)) return ReclaimLog{};
  auto text = fs::read_file(path, 4u << 20);
  if (!text) return std::unexpected(text.error());
  try {
    const json doc = json::parse(*text);
    ReclaimLog log;
    for (const auto& e : doc.at("events")) log.events.push_back(event_of(e));
    log.stopped = doc.at("stopped").get<std::map<std::string, std::uint64_t>>();
    log.refused = doc.at("refused").get<std::map<std::string, std::uint64_t>>();
    log.share_stopped = doc.at("share_stopped").get<std::map<std::string, std::uint64_t>>();
    for (const auto& [key, f] : doc.at("flags").items())
      log.flags[key] = ReclaimFlag{f.at("gpu").get<std::string>(), f.at("id").get<std::string>(),
                                   f.at("published").get<std::uint64_t>(), f.at("held").get<std::uint64_t>(),
                                   f.at("since").get<std::int64_t>()};
    if (doc.contains("untold"))  // written since the reclaimer tells shares of one cgroup apart
      for (const auto& [key, u] : doc.at("untold").items())
        log.untold[key] = ReclaimUntold{u.at("gpu").get<std::string>(), u.at("id").get<std::string>(),
                                        u.at("with").get<std::vector<std::string>>()};
    const auto counts = swap_counts(log);
    for (std::size_t i = 0; i < counts.size(); ++i)  // written since burst.reclaim: swap
      if (doc.contains(kSwapCounts[i])) *counts[i] = doc.at(kSwapCounts[i]).get<Counts>();
    return log;
  } catch (const std::exception& e) {
    return internal_error(path + ": not a reclaim log (" + e.what() + "); remove it, the reclaimer writes it again");
  }
}

Result<> save_reclaim_log(const std::string& path, const ReclaimLog& log) {
  json events = json::array(), flags = json::object(), untold = json::object();
  for (const auto& e : log.events) events.push_back(event_json(e));
  for (const auto& [key, f] : log.flags)
    flags[key] = {{"gpu", f.gpu_uuid}, {"id", f.id}, {"published", f.published}, {"held", f.held}, {"since", f.since}};
  for (const auto& [key, u] : log.untold) untold[key] = {{"gpu", u.gpu_uuid}, {"id", u.id}, {"with", u.with}};
  json doc{{"version", 1},
           {"events", events},
           {"stopped", log.stopped},
           {"refused", log.refused},
           {"share_stopped", log.share_stopped},
           {"flags", flags},
           {"untold", untold}};
  const auto counts = swap_counts(log);
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (!counts[i]->empty()) doc[kSwapCounts[i]] = *counts[i];
  return fs::write_file_atomic(path, doc.dump() + "\n", 0644);
}

void record_stop(ReclaimLog& log, ReclaimEvent e, const std::string& key) {
  log.stopped[e.gpu_uuid]++;
  log.share_stopped[key]++;
  log.events.push_back(std::move(e));
  if (log.events.size() > kMaxReclaimEvents) log.events.erase(log.events.begin());
}

void record_swap(ReclaimLog& log, ReclaimEvent e, const std::string& key) {
  const bool out = e.action == "swapped out";
  (out ? log.swap_outs : log.swap_ins)[key]++;
  (out ? log.swap_out_bytes : log.swap_in_bytes)[key] += e.bytes;
  if (out) log.gpu_swap_outs[e.gpu_uuid]++;
  log.events.push_back(std::move(e));
  if (log.events.size() > kMaxReclaimEvents) log.events.erase(log.events.begin());
}

}  // namespace gpufrac::reclaim
