#include "cdi/device_names.hpp"

#include <array>

#include "cdi/cdi_names.hpp"
#include "core/mig/mig_device.hpp"
#include "core/mig/mig_profile_name.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

constexpr const char* kForms =
    "use <gpu>, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid>, <gpu>-<fraction>, <gpu>-<memory> or <gpu>-sm<percent> as "
    "gpufrac cdi list prints them, e.g. 0, 0:1, 0-0.25, 0-4Gi or 0-sm30";
constexpr std::size_t kMaxNameBytes = 128;  // the ledger's device-key limit

std::unexpected<Error> refuse(std::string_view name, std::string_view problem) {
  return user_error(text::cat("CDI device ", text::quote(name), ": ", problem));
}
std::unexpected<Error> bad_form(std::string_view name, std::string_view problem) {
  return user_error(text::cat("CDI device ", text::quote(name), ": ", problem, "; ", kForms));
}

// A decimal index or position without leading zeros (at most 4 digits).
std::optional<std::uint32_t> parse_index(std::string_view s) {
  if (s.empty() || s.size() > 4 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  auto v = text::parse_u64(s);
  if (!v) return std::nullopt;
  return static_cast<std::uint32_t>(*v);
}

bool is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// <prefix>xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in lower-case hex, as NVML prints UUIDs.
bool is_uuid(std::string_view s, std::string_view prefix) {
  static constexpr std::array<std::size_t, 5> kGroups{8, 4, 4, 4, 12};
  if (!s.starts_with(prefix)) return false;
  auto parts = text::split(s.substr(prefix.size()), '-');
  if (parts.size() != kGroups.size()) return false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].size() != kGroups[i]) return false;
    for (char c : parts[i])
      if (!is_lower_hex(c)) return false;
  }
  return true;
}

std::string gpu_list(const Inventory& inv) {
  std::vector<std::string> out;
  for (const auto& g : inv.gpus) out.push_back(text::cat(g.index));
  return out.empty() ? "it has no GPU" : "it has GPU " + text::join(out, ", ");
}

Result<const Gpu*> shared_gpu(std::string_view name, std::uint32_t index, const Inventory& inv) {
  const Gpu* g = inv.gpu_by_index(index);
  if (!g) return refuse(name, text::cat("GPU ", index, " is not on this node (", gpu_list(inv), ")"));
  if (g->mig_enabled)
    return refuse(name, text::cat("GPU ", index, " is in MIG mode: its memory belongs to its MIG instances; use ",
                                  index, ":<mig> or MIG-<uuid>"));
  return g;
}

Request whole(GpuPin pin) {
  Request r;
  r.kind = SizeKind::fraction;
  r.fraction = kWholeGpuPpm;
  r.gpu = std::move(pin);
  return r;
}

// A MIG device (a compute instance; the whole GPU instance when it is the full-size one) books
// its device profile, "1c.3g.40gb" or "3g.40gb", pinned to its UUID.
Result<Request> mig_request(std::string_view name, const Gpu& g, const MigInstance& m) {
  const std::string device_profile = mig_device_profile(g, m);
  auto profile = canonical_mig_profile(device_profile);
  if (!profile)
    return refuse(name, "MIG instance " + m.uuid + " has profile " + text::quote(device_profile) + ": " +
                            profile.error().message);
  Request r;
  r.kind = SizeKind::mig_profile;
  r.mig_profile = *profile;
  r.gpu = GpuPin{g.index, "", m.uuid};
  return r;
}

Result<Request> mig_by_position(std::string_view name, std::uint32_t index, std::string_view pos,
                                const Inventory& inv) {
  auto p = parse_index(pos);
  if (!p) return bad_form(name, text::cat(text::quote(pos), " is not a MIG instance position"));
  const Gpu* g = inv.gpu_by_index(index);
  if (!g) return refuse(name, text::cat("GPU ", index, " is not on this node (", gpu_list(inv), ")"));
  if (!g->mig_enabled)
    return refuse(name, text::cat("GPU ", index, " is not in MIG mode; use ", index, " or ", index, "-<fraction>"));
  if (*p >= g->mig_instances.size())
    return refuse(name, g->mig_instances.empty()
                            ? text::cat("GPU ", index, " has no MIG instance")
                            : text::cat("GPU ", index, " has ", g->mig_instances.size(), " MIG instances (", index,
                                        ":0 to ", index, ":", g->mig_instances.size() - 1, ")"));
  return mig_request(name, *g, g->mig_instances[*p]);
}

// <gpu>-sm<percent>: an SM share (docs/architecture.md "SM sharing"), compute=<p> compute-mode=sm.
Result<Request> sm_share(std::string_view name, std::uint32_t index, std::string_view percent) {
  auto ppm = parse_compute_percent(percent);
  if (!ppm)
    return refuse(name, text::cat(text::quote(percent),
                                  " is not a percent of the GPU's SMs; use <gpu>-sm<percent>, "
                                  "an integer 1 to 100 without leading zeros, e.g. 0-sm30"));
  Request r;
  r.gpu = GpuPin{index, "", ""};
  r.kind = SizeKind::fraction;
  r.fraction = *ppm;
  r.sized_by_compute = true;
  r.compute_ppm = *ppm;
  r.compute_mode = ComputeMode::sm;
  return r;
}

Result<Request> share(std::string_view name, std::uint32_t index, std::string_view size, const Inventory& inv) {
  auto g = shared_gpu(name, index, inv);
  if (!g) return std::unexpected(g.error());
  if (size.starts_with("sm")) return sm_share(name, index, size.substr(2));
  Request r;
  r.gpu = GpuPin{index, "", ""};
  if (size.starts_with("0.") || size == "1" || size.starts_with("1.")) {
    auto f = parse_fraction(size);
    if (!f) return bad_form(name, f.error().message);
    if (*f >= kWholeGpuPpm) return refuse(name, text::cat("a whole GPU is device ", index));
    if (format_fraction(*f) != size)
      return refuse(name, text::cat(text::quote(size), " is not canonical; use ", index, "-", format_fraction(*f)));
    r.kind = SizeKind::fraction;
    r.fraction = *f;
    return r;
  }
  auto m = parse_memory(size);
  if (!m) return bad_form(name, m.error().message);
  auto canonical = format_memory(*m);
  if (!canonical || *canonical != size)
    return refuse(name, text::cat(text::quote(size), " is not canonical; use ",
                                  canonical ? text::cat(index, "-", *canonical) : std::string("a whole number of kB")));
  if (*m >= (*g)->memory_bytes)
    return refuse(name, text::cat(size, " is not less than GPU ", index, "'s ", text::format_bytes((*g)->memory_bytes),
                                  "; a whole GPU is device ", index));
  r.kind = SizeKind::memory;
  r.memory_bytes = *m;
  return r;
}

Result<Request> by_index(std::string_view name, const Inventory& inv) {
  auto end = name.find_first_not_of("0123456789");
  auto index = parse_index(name.substr(0, end));
  if (!index) return bad_form(name, "does not start with a GPU index");
  if (end == std::string_view::npos) {
    auto g = shared_gpu(name, *index, inv);
    if (!g) return std::unexpected(g.error());
    return whole(GpuPin{*index, "", ""});
  }
  if (name[end] == ':') return mig_by_position(name, *index, name.substr(end + 1), inv);
  if (name[end] == '-') return share(name, *index, name.substr(end + 1), inv);
  return bad_form(name, text::cat("unexpected ", text::quote(name.substr(end, 1)), " after the GPU index"));
}

Result<Request> by_uuid(std::string_view name, const Inventory& inv) {
  if (name.starts_with("GPU-")) {
    if (!is_uuid(name, "GPU-")) return bad_form(name, "not a GPU UUID (lower-case hex, 8-4-4-4-12)");
    const Gpu* g = inv.gpu_by_uuid(std::string(name));
    if (!g) return refuse(name, "no such GPU on this node; run gpufrac info --refresh, then gpufrac cdi generate");
    if (g->mig_enabled) return std::unexpected(shared_gpu(name, g->index, inv).error());
    return whole(GpuPin{std::nullopt, g->uuid, ""});
  }
  if (!is_uuid(name, "MIG-")) return bad_form(name, "not a MIG UUID (lower-case hex, 8-4-4-4-12)");
  auto m = inv.mig_by_uuid(std::string(name));
  if (!m)
    return refuse(name, "no such MIG instance on this node; run gpufrac info --refresh, then gpufrac cdi generate");
  return mig_request(name, *m->first, *m->second);
}

// The bare device name of a gpufrac.io/gpu device, checked against the CDI grammar.
Result<std::string_view> bare_name(std::string_view name) {
  if (name.size() > kMaxNameBytes + kKind.size() + 1)
    return user_error(text::cat("CDI device ", text::quote(name), ": too long (at most ", kMaxNameBytes, " bytes)"));
  if (name.find('=') != std::string_view::npos) {
    auto q = parse_qualified_name(name);
    if (!q) return user_error(text::cat("CDI device ", text::quote(name), ": ", q.error().message));
    if (q->kind.str() != kKind)
      return user_error(text::cat("CDI device ", text::quote(name), ": kind ", q->kind.str(), " is not ", kKind));
    name = name.substr(name.find('=') + 1);
  }
  if (name.size() > kMaxNameBytes)
    return user_error(text::cat("CDI device ", text::quote(name), ": too long (at most ", kMaxNameBytes, " bytes)"));
  if (std::string problem = device_name_problem(name); !problem.empty()) return bad_form(name, problem);
  return name;
}

}  // namespace

Result<Request> request_for_cdi_device(std::string_view qualified, const Inventory& inv) {
  auto name = bare_name(qualified);
  if (!name) return std::unexpected(name.error());
  if (*name == kAllDevice)
    return refuse(*name, "names every device of the node; it books each member (cdi_device_members) on its own");
  if (name->starts_with("GPU-") || name->starts_with("MIG-")) return by_uuid(*name, inv);
  return by_index(*name, inv);
}

Result<std::vector<std::string>> cdi_device_members(std::string_view qualified, const Inventory& inv) {
  auto name = bare_name(qualified);
  if (!name) return std::unexpected(name.error());
  if (*name != kAllDevice) {
    auto r = request_for_cdi_device(*name, inv);
    if (!r) return std::unexpected(r.error());
    return std::vector<std::string>{std::string(*name)};
  }
  std::vector<std::string> out;
  for (const auto& g : inv.gpus) {
    if (!g.mig_enabled) out.push_back(whole_gpu_name(g));
    // One compute instance per GPU instance (CUDA enumerates one): the first of a split one.
    for (std::size_t i = 0; i < g.mig_instances.size(); ++i)
      if (i == 0 || g.mig_instances[i - 1].gi_id != g.mig_instances[i].gi_id) out.push_back(mig_name(g, i));
  }
  if (out.empty()) return refuse(*name, "this node has no GPU or MIG instance to give");
  return out;
}

std::string whole_gpu_name(const Gpu& gpu) {
  return text::cat(gpu.index);
}

std::string mig_name(const Gpu& gpu, std::size_t position) {
  return text::cat(gpu.index, ":", position);
}

std::string fraction_share_name(const Gpu& gpu, Ppm fraction) {
  return text::cat(gpu.index, "-", format_fraction(fraction));
}

std::string sm_share_name(const Gpu& gpu, std::uint32_t percent) {
  return text::cat(gpu.index, "-sm", percent);
}

std::optional<std::string> memory_share_name(const Gpu& gpu, std::uint64_t bytes) {
  auto m = format_memory(bytes);
  if (!m) return std::nullopt;
  return text::cat(gpu.index, "-", *m);
}

}  // namespace gpufrac::cdi
