// Rendering Edits into an OCI config.json (pure; no I/O). The spec is held as an ordered JSON value
// so that keys the wrapper does not touch keep their order when the file is written back.
//
// What one Edits value becomes:
//   env            -> process.env (an existing KEY= entry is replaced)
//   device_nodes   -> linux.devices {path, type, major, minor, fileMode, uid 0, gid 0} (an entry with
//                     the same path is replaced) and linux.resources.devices allow rules
//                     {allow, type, major, minor, access} appended after the spec's own rules
//   mounts         -> mounts {destination, type, source, options}, appended in planned order (the
//                     tmpfs before the binds into it); a bind always carries "bind" or "rbind"
//   hooks          -> hooks.<stage>[] {path, args, env, timeout}
// plus the marker annotation gpufrac.io/injected, so a spec is never injected twice.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/plan/edits.hpp"

namespace gpufrac::wrapper {

using Spec = nlohmann::ordered_json;

inline constexpr const char* kInjectedValue = "true";

// True when the spec was already prepared: it carries the marker annotation, or some hook of any
// stage runs gpufrac-hook (hook_path, or a path whose file name is gpufrac-hook), as a CDI spec or
// hooks.d adds them.
bool already_injected(const Spec& spec, const std::string& hook_path);

// Adds the edits and the marker. Fails (one line naming the field) when a field it extends has the
// wrong JSON type, e.g. linux.devices that is not a list.
Result<> apply_edits(Spec& spec, const Edits& edits);

}  // namespace gpufrac::wrapper
