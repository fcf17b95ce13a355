#include "nvml/mig_made.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

Result<> write_made(const Config& cfg, const std::string& gpu_uuid, const std::vector<std::string>& uuids) {
  nlohmann::json doc{{"compute_instances", uuids}};
  return fs::write_file_atomic(mig_made_path(cfg, gpu_uuid), doc.dump() + "\n", 0600);
}

}  // namespace

std::string mig_made_path(const Config& cfg, const std::string& gpu_uuid) {
  return cfg.state_dir + "/mig-" + gpu_uuid + ".made";
}

Result<std::vector<std::string>> read_mig_made(const Config& cfg, const std::string& gpu_uuid) {
  const std::string path = mig_made_path(cfg, gpu_uuid);
  auto text = fs::read_file(path, 1u << 20);
  if (!text) {
    if (text.error().err == ENOENT) return std::vector<std::string>{};
    return std::unexpected(text.error());
  }
  auto doc = nlohmann::json::parse(*text, nullptr, false);
  const auto* list = doc.is_object() && doc.contains("compute_instances") ? &doc["compute_instances"] : nullptr;
  if (list == nullptr || !list->is_array() ||
      !std::all_of(list->begin(), list->end(), [](const nlohmann::json& u) { return u.is_string(); }))
    return internal_error(text::cat(path, ": not a gpufrac list of made compute instances; remove it (gpufrac then ",
                                    "keeps every split GPU instance until an operator destroys it)"));
  return list->get<std::vector<std::string>>();
}

Result<> add_mig_made(const Config& cfg, const std::string& gpu_uuid, const std::vector<std::string>& uuids) {
  auto made = read_mig_made(cfg, gpu_uuid);
  if (!made) return std::unexpected(made.error());
  for (const std::string& u : uuids)
    if (std::find(made->begin(), made->end(), u) == made->end()) made->push_back(u);
  return write_made(cfg, gpu_uuid, *made);
}

Result<std::vector<std::string>> prune_mig_made(const Config& cfg, const Gpu& gpu) {
  auto made = read_mig_made(cfg, gpu.uuid);
  if (!made) return std::unexpected(made.error());
  const auto gone = std::erase_if(*made, [&](const std::string& u) {
    return std::none_of(gpu.mig_instances.begin(), gpu.mig_instances.end(),
                        [&](const MigInstance& m) { return m.uuid == u; });
  });
  if (gone > 0)
    if (auto r = write_made(cfg, gpu.uuid, *made); !r) return std::unexpected(r.error());
  return made;
}

}  // namespace gpufrac
