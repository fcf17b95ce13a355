#include "reclaim/reclaim_log.hpp"

#include <nlohmann/json.hpp>

#include "core/fs.hpp"

namespace gpufrac::reclaim {

using nlohmann::json;

namespace {

json event_json(const ReclaimEvent& e) {
  return {{"time", e.time}, {"gpu", e.gpu_uuid}, {"victim", e.victim},
          {"pid", e.pid},   {"bytes", e.bytes},  {"owner", e.owner}};
}

ReclaimEvent event_of(const json& j) {
  return {j.at("time").get<std::int64_t>(), j.at("gpu").get<std::string>(),     j.at("victim").get<std::string>(),
          j.at("pid").get<std::int64_t>(),  j.at("bytes").get<std::uint64_t>(), j.at("owner").get<std::string>()};
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
  const json doc{{"version", 1},
                 {"events", events},
                 {"stopped", log.stopped},
                 {"refused", log.refused},
                 {"share_stopped", log.share_stopped},
                 {"flags", flags},
                 {"untold", untold}};
  return fs::write_file_atomic(path, doc.dump() + "\n", 0644);
}

void record_stop(ReclaimLog& log, ReclaimEvent e, const std::string& key) {
  log.stopped[e.gpu_uuid]++;
  log.share_stopped[key]++;
  log.events.push_back(std::move(e));
  if (log.events.size() > kMaxReclaimEvents) log.events.erase(log.events.begin());
}

}  // namespace gpufrac::reclaim
