// k3s and RKE2: their embedded containerd's config.toml is rendered by k3s at each start from a Go
// template, so the handler goes into the template: config-v3.toml.tmpl (tried first by k3s with
// containerd 2.x) or config.toml.tmpl, next to the rendered config. A template gpufrac creates
// extends k3s's built-in one ({{ template "base" . }}, k3s releases since September 2023) and adds
// the runtime tables; an operator's template gets the same tables appended between marker lines
// (replaced on the next run, removed by restoring the file). The tables follow the rendered
// config's version (2: containerd 1.7, plugin io.containerd.grpc.v1.cri; 3: 2.x,
// io.containerd.cri.v1.runtime), never another one, and copy runc's options from it (SystemdCgroup).
// CDI: k3s's base template defines the CRI plugin's table (CDI on by default with containerd 2.x,
// off with 1.7 unless the base sets enable_cdi); it is not repeated, since a table defined twice in
// one file is a TOML error. A rendered config with CDI off gives a warning (Plan::warnings).
#pragma once

#include <string>

#include "core/error.hpp"
#include "engine-config/configure.hpp"

namespace gpufrac::engine_config {

inline constexpr const char* kK3sBegin = "# BEGIN gpufrac: the runtime handler, written by `gpufrac node setup`\n";
inline constexpr const char* kK3sEnd = "# END gpufrac\n";

// k3s: /var/lib/rancher/k3s/agent/etc/containerd/config.toml; rke2 the same under rancher/rke2.
std::string k3s_rendered_config(bool rke2);

// The template k3s reads for a rendered config of this version, among those that exist (v3 first
// for version 3), else the version's own name.
std::string k3s_template_path(const std::string& rendered_path, int version, bool v3_exists, bool v2_exists);

// rendered: the config k3s wrote (read for its version and runc's options; required).
Result<Plan> plan_k3s(const SourceFile& rendered, const SourceFile& tmpl, const std::string& runtime_path);

// The version of a rendered config (2 or 3).
Result<int> k3s_rendered_version(const SourceFile& rendered);

}  // namespace gpufrac::engine_config
