// cdiVersion: the versions the CDI library knows and the minimum a spec's content needs, computed
// as specs-go requiredVersion does (newest feature first):
//   1.1.0 netDevices, intelRdt.schemata or intelRdt.enableMonitoring
//   0.7.0 intelRdt, additionalGids
//   0.6.0 annotations (spec or device), a '.' in the class of the kind
//   0.5.0 deviceNodes[].hostPath, a device name that does not start with a letter
//   0.4.0 mounts[].type
//   0.3.0 otherwise (the earliest version the library accepts since v0.5.4)
// Runtimes accept only versions up to their library's, whatever fields a spec uses: podman 4.3.1
// (library v0.5.2) reads at most 0.5.0.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpufrac::cdi {

inline constexpr std::string_view kEarliestVersion = "0.3.0";
// The newest cdiVersion podman 4.3.1 (Debian 12) accepts.
inline constexpr std::string_view kPodman431Version = "0.5.0";

// Why a spec needs a version: the first thing found that needs it.
struct VersionNeed {
  std::string version;   // e.g. "0.5.0"
  std::string location;  // e.g. "devices[0].name"; empty for the baseline
  std::string feature;   // e.g. "a device name that does not start with a letter"
};

VersionNeed required_version(const nlohmann::ordered_json& spec);

// "0.5.0" for a version the library knows (a leading 'v' is dropped), nullopt otherwise.
std::optional<std::string> known_version(std::string_view text);
// Known versions only: <0, 0, >0.
int compare_versions(std::string_view a, std::string_view b);
std::string known_version_list();  // "0.1.0, 0.2.0, ..., 1.1.0"

}  // namespace gpufrac::cdi
