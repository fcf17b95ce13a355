// The two inputs a hook gets from the runtime: the OCI state on stdin and <bundle>/config.json.
// Both are untrusted in shape (runc and crun differ: do not rely on status, ociVersion or the
// type of pid) and bounded in size.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gpufrac::bundle {

// runc copies the annotations into the state, so it is bounded like config.json.
inline constexpr std::size_t kMaxStateBytes = 16u << 20;   // 16 MiB
inline constexpr std::size_t kMaxConfigBytes = 16u << 20;  // 16 MiB

struct OciState {
  std::string id;
  std::string bundle;
  std::optional<pid_t> pid;  // absent after the container died (poststop)
};

// A hook the spec already carries (any stage): its program and arguments.
struct SpecHook {
  std::string path;
  std::vector<std::string> args;
};

struct BundleSpec {
  std::map<std::string, std::string> annotations;
  std::vector<std::string> env;                 // process.env: requests by environment (core/request/env_request.hpp)
  std::string rootfs;                           // root.path made absolute against the bundle
  bool read_only_root = false;                  // root.readonly
  std::vector<std::string> mount_destinations;  // mounts[].destination
  std::string preload_source;             // mounts[].source of a bind at /etc/ld.so.preload (the last one), if any
  std::vector<std::string> device_paths;  // linux.devices[].path
  std::vector<SpecHook> hooks;            // hooks.<every stage>[]
  bool private_pid_namespace = false;     // a new PID namespace (no path)
  std::optional<std::string> pid_namespace_path;          // joining an existing one
  nlohmann::json device_rules = nlohmann::json::array();  // linux.resources.devices
};

Result<OciState> parse_oci_state(std::string_view text);
// Both refuse JSON that a runtime could read differently (core/spec/strict_json.hpp).
Result<BundleSpec> parse_bundle_spec(std::string_view config_json, const std::string& bundle);
// The same from a document already parsed strictly.
Result<BundleSpec> bundle_spec_from(const nlohmann::json& config, const std::string& bundle);
// The same from the ordered DOM gpufrac-runtime edits (config.json is parsed once per create).
Result<BundleSpec> bundle_spec_from(const nlohmann::ordered_json& config, const std::string& bundle);

// config.json read once and checked strictly, with what a request is made of (annotations and
// process.env, the only fields of request_fields) taken during that one pass; full() builds the
// DOM and the rest only for the containers that ask for a share. The hook's fast path (every
// container on the node) never builds a DOM.
struct BundleConfig {
  std::string bundle;
  std::string text;
  BundleSpec request_fields;
  bool checked = true;  // false: skipped (Scan::when_named), no request can be in the text
  Result<BundleSpec> full() const;
};
// Scan::when_named: the strict pass runs only when the text can hold something gpufrac reads
// (core/spec/spec_scan.hpp may_name_gpufrac); otherwise request_fields stay empty and the text is not checked.
enum class Scan { always, when_named };
Result<BundleConfig> load_bundle_config(const std::string& bundle, Scan scan = Scan::always);

// The host-PID policy (config require-host-pid): a spec that creates its own PID namespace, or joins
// one that is not the host's, is refused with one line naming --pid=host and hostPID: true.
Result<> check_host_pid(const BundleSpec& spec, bool require_host_pid, const std::string& proc_root);

}  // namespace gpufrac::bundle
