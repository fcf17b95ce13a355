#include "limits/host/limit_file.hpp"

#include <memory>

#include "core/fs.hpp"
#include "gf_config.h"

namespace gpufrac::limits {

namespace {

std::string one_line(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string hex16(std::uint64_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kHex[v & 15];
  return out;
}

}  // namespace

std::string render_limit_file(const LimitFile& file) {
  std::string out = "version " + std::to_string(GPUFRAC_LIMITS_VERSION) + "\n";
  if (!file.container.empty()) out += "container " + one_line(file.container) + "\n";
  out += "region " + one_line(file.region) + "\n";
  for (const auto& d : file.devices) {
    out += "device " + one_line(d.uuid) + " " + std::to_string(d.bytes) + "\n";
    if (d.request != 0) out += "burst " + one_line(d.uuid) + " " + std::to_string(d.request) + "\n";
    if (d.wait_ms != 0) out += "wait " + one_line(d.uuid) + " " + std::to_string(d.wait_ms) + "\n";
    if (d.sm_ppm != 0) out += "mps " + one_line(d.uuid) + " " + std::to_string(d.sm_ppm / 10'000) + "\n";
    if (d.compute_ppm == 0) continue;
    out += "compute " + one_line(d.uuid) + " " + std::to_string(d.compute_ppm) + " " + to_string(d.compute_mode) + " " +
           to_string(d.priority) + "\n";
    if (d.compute_token != 0) out += "arbiter " + one_line(d.uuid) + " " + hex16(d.compute_token) + "\n";
  }
  return out;
}

Result<LimitFile> parse_limit_file(std::string_view text) {
  if (text.size() > GF_LIMIT_FILE_MAX) {
    return internal_error("limit file: larger than " + std::to_string(GF_LIMIT_FILE_MAX) + " bytes");
  }
  auto cfg = std::make_unique<gf_config>();
  char err[512] = {0};
  if (gf_config_parse(text.data(), text.size(), cfg.get(), err, sizeof err) != 0) {
    return internal_error(std::string("limit file: ") + err);
  }
  LimitFile out{cfg->container, cfg->region, {}};
  for (unsigned i = 0; i < cfg->device_count; i++) {
    const gf_device_limit& d = cfg->devices[i];
    out.devices.push_back({d.uuid, d.limit, d.compute_ppm, d.compute_strict ? ComputeMode::strict : ComputeMode::fair,
                           d.priority_high ? ComputePriority::high : ComputePriority::normal, d.compute_token,
                           d.request, d.wait_ms});
  }
  return out;
}

Result<LimitFile> read_limit_file(const std::string& path) {
  auto text = fs::read_file(path, GF_LIMIT_FILE_MAX + 1);
  if (!text) return wrap_error(text, "limit file " + path);
  auto parsed = parse_limit_file(*text);
  if (!parsed) return wrap_error(parsed, path);
  return parsed;
}

}  // namespace gpufrac::limits
