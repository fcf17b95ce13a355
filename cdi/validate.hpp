// `gpufrac cdi validate`: the rules a runtime's CDI library applies when it loads a spec
// (container-device-interface pkg/cdi, podman 4.3.1's v0.5.2 included), plus what those runtimes
// trip over later. Every problem names its location, e.g. devices[3].containerEdits.hooks[0].hookName.
//
// Errors (the runtime would drop the spec, or the container would fail):
//  - strict fields: an unknown key anywhere (the library parses with UnmarshalStrict), a wrong
//    type, a required key missing (cdiVersion, kind, devices, devices[].name,
//    devices[].containerEdits, deviceNodes[].path, mounts[].hostPath and .containerPath,
//    hooks[].hookName and .path, netDevices[] names);
//  - cdiVersion unknown to the library, or older than the content needs (version.hpp);
//  - kind not vendor/class (each at least 2 characters: podman 4.3.1 panics on one);
//  - devices empty, a device name outside the grammar, a duplicate name, a device with empty edits;
//  - env entries without '=' after a non-empty name (spec, device and hook env);
//  - device nodes: empty or relative path or hostPath, a type other than b, c, u, p, a negative
//    major or minor, permissions not a subset of rwm (or "none");
//  - mounts: empty or relative containerPath; an empty hostPath, or a relative one on a bind mount
//    (a mount with another type, e.g. tmpfs, names its source, which need not be a path);
//  - hooks: a name outside prestart, createRuntime, createContainer, startContainer, poststart,
//    poststop; an empty or relative path; a timeout <= 0;
//  - intelRdt.closID not a file name or "/"; netDevices with empty or duplicate names.
// Warnings (exit 0): a cdiVersion newer than podman 4.3.1 (Debian 12) reads. Such a spec is valid
// and newer runtimes load it; `generate` never writes one unless the content needs it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/schema_table.hpp"

namespace gpufrac::cdi {

enum class Severity { error, warning };

struct Problem {
  Severity severity = Severity::error;
  std::string location;  // "" for the document itself
  std::string message;
  bool operator==(const Problem&) const = default;
};

std::vector<Problem> validate_spec(const nlohmann::ordered_json& spec);
// "devices[0].name: message" or "cdiVersion: warning: message".
std::string format_problem(const Problem& p);
bool has_errors(const std::vector<Problem>& problems);

namespace detail {
// Unknown keys, types and required keys of one object (and everything under it).
void check_fields(const nlohmann::ordered_json& value, ObjectKind kind, const std::string& where,
                  std::vector<Problem>& out);
// The rules on one containerEdits object (where = its location).
void check_edits(const nlohmann::ordered_json& edits, const std::string& where, std::vector<Problem>& out);
}  // namespace detail

}  // namespace gpufrac::cdi
