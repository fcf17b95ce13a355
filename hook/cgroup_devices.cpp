#include "hook/cgroup_devices.hpp"

#include <fcntl.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::hook {

namespace {

bool rule_matches(const nlohmann::json& r, char type, std::int64_t major, std::int64_t minor, std::string_view access) {
  std::string rtype = r.value("type", "a");
  if (rtype != "a" && rtype != std::string(1, type)) return false;
  if (r.contains("major") && !r["major"].is_null() && r["major"].get<std::int64_t>() != major) return false;
  if (r.contains("minor") && !r["minor"].is_null() && r["minor"].get<std::int64_t>() != minor) return false;
  std::string raccess = r.value("access", "rwm");
  for (char c : access)
    if (raccess.find(c) == std::string::npos) return false;
  return true;
}

}  // namespace

bool spec_allows_device(const nlohmann::json& rules, char type, std::int64_t major, std::int64_t minor,
                        std::string_view access) {
  if (!rules.is_array()) return false;
  bool allowed = false;
  try {
    for (const auto& r : rules)
      if (r.is_object() && rule_matches(r, type, major, minor, access)) allowed = r.value("allow", false);
  } catch (const nlohmann::json::exception&) {
    return false;  // malformed rules never grant anything
  }
  return allowed;
}

Result<std::optional<std::string>> devices_cgroup_v1(const std::string& proc_root, pid_t pid) {
  auto content = fs::read_file(text::cat(proc_root, "/", pid, "/cgroup"), 1u << 20);
  if (!content) return std::unexpected(content.error());
  std::istringstream in(*content);
  for (std::string line; std::getline(in, line);) {
    auto parts = text::split(line, ':');
    if (parts.size() < 3) continue;
    for (const auto& c : text::split(parts[1], ','))
      if (c == "devices") return std::optional<std::string>(line.substr(parts[0].size() + parts[1].size() + 2));
  }
  return std::optional<std::string>();
}

Result<> allow_devices(const std::string& proc_root, const std::string& cgroup_root, pid_t pid,
                       const nlohmann::json& rules, const std::vector<EditDeviceNode>& nodes) {
  std::vector<std::string> lines;
  for (const auto& n : nodes)
    if (!spec_allows_device(rules, n.type, n.major, n.minor, n.permissions))
      lines.push_back(text::cat(n.type, " ", n.major, ":", n.minor, " ", n.permissions));
  if (lines.empty()) return {};
  auto path = devices_cgroup_v1(proc_root, pid);
  if (!path) return std::unexpected(path.error());
  if (!*path)
    return user_error(
        "this host uses cgroup v2 only, where an OCI hook cannot grant GPU device access; use the CDI devices "
        "(--device gpufrac.io/gpu=0-0.25) or the gpufrac-runtime wrapper, which let the runtime allow them");
  const std::string file = cgroup_root + "/devices" + **path + "/devices.allow";
  fs::UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return sys_error("cannot open " + file);
  for (const auto& l : lines)
    if (auto r = fs::write_all(fd.get(), l, file); !r) return r;  // one rule per write(2)
  return {};
}

}  // namespace gpufrac::hook
