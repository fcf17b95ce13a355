#include "k8s/checkpoint.hpp"

#include <cerrno>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;
constexpr int kVersion = 1;
constexpr std::size_t kMaxBytes = 64u << 20;

// FNV-1a, 64 bits, over the canonical dump of "claims".
std::string checksum(const std::string& s) {
  return text::fnv1a64_hex(s);
}

json claims_json(const Checkpoint& cp) {
  json claims = json::object();
  for (const auto& [uid, c] : cp.claims) {
    json devices = json::array();
    for (const auto& d : c.devices)
      devices.push_back({{"request", d.request},
                         {"pool", d.pool},
                         {"device", d.device},
                         {"shareID", d.share_id},
                         {"cdiDeviceIDs", d.cdi_ids}});
    claims[uid] = {{"namespace", c.ns},
                   {"name", c.name},
                   {"state", c.state == PrepareState::completed ? "completed" : "started"},
                   {"devices", std::move(devices)}};
  }
  return claims;
}

PreparedDevice device_from(const json& d) {
  return {d.at("request").get<std::string>(), d.at("pool").get<std::string>(), d.at("device").get<std::string>(),
          d.at("shareID").get<std::string>(), d.at("cdiDeviceIDs").get<std::vector<std::string>>()};
}

}  // namespace

// The same document json{version, checksum, claims}.dump() gives (keys in order), with the claims
// serialized once: the checksum covers exactly that text.
std::string checkpoint_text(const Checkpoint& cp) {
  const std::string claims = claims_json(cp).dump();
  return text::cat("{\"checksum\":\"", checksum(claims), "\",\"claims\":", claims, ",\"version\":", kVersion, "}\n");
}

Result<Checkpoint> parse_checkpoint(const std::string& text, const std::string& path) {
  auto damaged = [&](const std::string& why) {
    return user_error(path + ": damaged checkpoint (" + why +
                      "); gpufrac-dra does not start on it: move it away only after unpreparing its claims");
  };
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return damaged("not JSON");
  if (doc.value("version", 0) != kVersion) return damaged("version is not 1");
  if (!doc.contains("claims") || !doc["claims"].is_object() || !doc.contains("checksum"))
    return damaged("no claims or checksum");
  if (doc["checksum"] != checksum(doc["claims"].dump())) return damaged("checksum mismatch");
  Checkpoint cp;
  try {
    for (const auto& [uid, c] : doc["claims"].items()) {
      PreparedClaim pc{
          c.at("namespace").get<std::string>(),
          c.at("name").get<std::string>(),
          c.at("state").get<std::string>() == "completed" ? PrepareState::completed : PrepareState::started,
          {}};
      for (const auto& d : c.at("devices")) pc.devices.push_back(device_from(d));
      cp.claims.emplace(uid, std::move(pc));
    }
  } catch (const std::exception& e) {
    return damaged(e.what());
  }
  return cp;
}

Result<Checkpoint> load_checkpoint(const std::string& path) {
  auto text = fs::read_file(path, kMaxBytes);
  if (!text) {
    if (text.error().err == ENOENT) return Checkpoint{};
    return std::unexpected(text.error());
  }
  return parse_checkpoint(*text, path);
}

Result<> save_checkpoint(const std::string& path, const Checkpoint& cp) {
  // Atomic but not fsynced: the checkpoint must outlive the plugin, not the machine (after a reboot no
  // claim's container runs, and the ledger on /run/gpufrac is gone too).
  return fs::write_file_atomic(path, checkpoint_text(cp), 0600, nullptr, fs::Durability::process);
}

}  // namespace gpufrac::dra
