#include "runtime-wrapper/requests.hpp"

#include <algorithm>

#include "cdi/device_names.hpp"
#include "core/text.hpp"

namespace gpufrac::wrapper {

std::vector<std::string> gpufrac_cdi_devices(const Annotations& annotations) {
  std::vector<std::string> out;
  for (auto it = annotations.lower_bound(kCdiAnnotationPrefix);
       it != annotations.end() && it->first.starts_with(kCdiAnnotationPrefix); ++it) {
    for (const auto& name : text::split(it->second, ',')) {
      if (!name.starts_with(kGpufracCdiPrefix)) continue;
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  }
  return out;
}

bool is_pod_sandbox(const Annotations& annotations) {
  for (const char* key : {kCriContainerType, kCrioContainerType})
    if (auto it = annotations.find(key); it != annotations.end() && it->second == "sandbox") return true;
  return false;
}

bool wants_gpufrac(const Annotations& annotations, bool aliases, const std::vector<std::string>& env) {
  if (is_pod_sandbox(annotations)) return false;
  return has_container_request(annotations, env, aliases) || !gpufrac_cdi_devices(annotations).empty();
}

Result<std::vector<WantedDevice>> annotation_request(const Annotations& annotations, bool aliases,
                                                     const std::vector<std::string>& env) {
  auto request = parse_container_request(annotations, env, aliases);
  if (!request) return std::unexpected(request.error());
  if (!*request) return std::vector<WantedDevice>{};
  return std::vector<WantedDevice>{{"", **request}};
}

Result<std::vector<WantedDevice>> cdi_requests(const std::vector<std::string>& names, const Inventory& inventory) {
  std::vector<WantedDevice> out;
  for (const auto& name : names) {
    auto members = cdi::cdi_device_members(name, inventory);
    if (!members) return std::unexpected(members.error());
    for (const auto& member : *members) {
      const std::string key = std::string(kGpufracCdiPrefix) + member;
      if (std::any_of(out.begin(), out.end(), [&](const WantedDevice& w) { return w.device_key == key; })) continue;
      auto request = cdi::request_for_cdi_device(member, inventory);
      if (!request) return std::unexpected(request.error());
      out.push_back({key, *request});
    }
  }
  return out;
}

}  // namespace gpufrac::wrapper
