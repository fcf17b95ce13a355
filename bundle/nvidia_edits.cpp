#include "bundle/nvidia_edits.hpp"

#include <algorithm>
#include <cctype>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::bundle {

namespace {

constexpr const char* kNvidiaHooks[] = {"nvidia-cdi-hook", "nvidia-ctk", "nvidia-container-runtime-hook",
                                        "nvidia-container-toolkit"};

bool digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// /dev/nvidia0, /dev/nvidia-caps/nvidia-cap12: a GPU or a MIG capability, not a control node.
bool is_gpu_node(std::string_view p) {
  if (p.starts_with("/dev/nvidia-caps/nvidia-cap")) return digits(p.substr(27));
  return p.starts_with("/dev/nvidia") && digits(p.substr(11));
}

bool is_nvidia_hook(const SpecHook& h) {
  const std::string name = fs::basename(h.path), arg0 = h.args.empty() ? "" : fs::basename(h.args[0]);
  return std::any_of(std::begin(kNvidiaHooks), std::end(kNvidiaHooks),
                     [&](const char* n) { return name == n || arg0 == n; });
}

}  // namespace

NvidiaEdits find_nvidia_edits(const BundleSpec& spec) {
  NvidiaEdits out;
  for (const SpecHook& h : spec.hooks) {
    if (!is_nvidia_hook(h)) continue;
    out.driver = true;
    const bool legacy =
        fs::basename(h.path) == "nvidia-container-runtime-hook" || fs::basename(h.path) == "nvidia-container-toolkit";
    if (legacy || std::find(h.args.begin(), h.args.end(), "update-ldcache") != h.args.end()) out.ldcache_hook = true;
  }
  for (const auto& d : spec.mount_destinations) {
    const std::string name = fs::basename(d);
    if (name.starts_with("libcuda.so") || name.starts_with("libnvidia-ml.so")) out.driver = true;
  }
  return out;
}

bool injects_driver(const Config& cfg, const Inventory& inv, const NvidiaEdits& nvidia) {
  if (cfg.driver.inject == DriverInject::never || inv.driver.empty()) return false;
  return cfg.driver.inject == DriverInject::always || !nvidia.driver;
}

Result<> check_spec_gpu_nodes(const BundleSpec& spec, const std::vector<EditDeviceNode>& granted) {
  std::vector<std::string> mine;
  for (const auto& n : granted)
    if (is_gpu_node(n.path)) mine.push_back(n.path);
  std::vector<std::string> found = spec.device_paths;
  found.insert(found.end(), spec.mount_destinations.begin(), spec.mount_destinations.end());
  for (const auto& p : found)
    if (is_gpu_node(p) && std::find(mine.begin(), mine.end(), p) == mine.end())
      return user_error(text::cat("the container spec also holds ", text::quote(p),
                                  ", a GPU gpufrac did not grant it (granted: ", text::join(mine, ", "),
                                  "); remove the other GPU request (e.g. --device nvidia.com/gpu=...) or ask gpufrac "
                                  "for that GPU too"));
  return {};
}

}  // namespace gpufrac::bundle
