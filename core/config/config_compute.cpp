// The config's compute: section (docs/architecture.md "SM sharing"): which GPUs gpufrac may switch to
// MPS for SM shares (sm-sharing: off | on-demand | [gpu list]) and how long an idle MPS daemon is kept.
#include <algorithm>

#include "core/config/config.hpp"
#include "core/config/yaml_util.hpp"

namespace gpufrac {

using yaml::Located;

bool SmSharingConfig::may_switch(std::uint32_t index, const std::string& uuid) const {
  if (mode != SmSharing::listed) return mode == SmSharing::on_demand;
  return std::any_of(gpus.begin(), gpus.end(),
                     [&](const std::string& g) { return g == uuid || g == std::to_string(index); });
}

const char* to_string(SmSharing s) {
  return s == SmSharing::off ? "off" : s == SmSharing::listed ? "listed" : "on-demand";
}

namespace {

constexpr const char* kSmSharingForm = "off, on-demand or a list of GPUs (indices or GPU-<uuid>), e.g. [0, 1]";

bool is_gpu_key(const std::string& key) {
  const bool index = !key.empty() && key.size() < 4 && key.find_first_not_of("0123456789") == std::string::npos;
  return index || (key.starts_with("GPU-") && key.size() <= 96);
}

Result<> parse_sm_sharing(const Located& n, SmSharingConfig& out) {
  if (n.node.IsScalar()) {
    auto v = yaml::as_choice(n, {"off", "on-demand"});
    if (!v) return n.fail(std::string("must be ") + kSmSharingForm);
    out.mode = *v == "off" ? SmSharing::off : SmSharing::on_demand;
    out.gpus.clear();
    return {};
  }
  if (!n.node.IsSequence()) return n.fail(std::string("must be ") + kSmSharingForm);
  auto list = yaml::as_string_list(n);
  if (!list) return std::unexpected(list.error());
  for (std::size_t i = 0; i < list->size(); ++i)
    if (!is_gpu_key((*list)[i])) return n.item(i).fail(std::string("is not a GPU; use ") + kSmSharingForm);
  out.mode = SmSharing::listed;
  out.gpus = std::move(*list);
  return {};
}

}  // namespace

Result<> parse_compute_section(const Located& n, SmSharingConfig& out) {
  if (auto r = yaml::check_keys(n, {"sm-sharing", "mps-idle-timeout"}); !r) return r;
  if (n.node["sm-sharing"])
    if (auto r = parse_sm_sharing(n.child("sm-sharing"), out); !r) return r;
  if (n.node["mps-idle-timeout"]) {
    std::uint64_t v = 0;
    GPUFRAC_TRY_ASSIGN(v, yaml::as_u64(n.child("mps-idle-timeout")));
    if (v > 86400 * 30) return n.child("mps-idle-timeout").fail("must be 0 to 2592000 seconds, e.g. 600");
    out.idle_timeout_s = static_cast<std::uint32_t>(v);
  }
  return {};
}

}  // namespace gpufrac
