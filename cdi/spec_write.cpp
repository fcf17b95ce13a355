#include "cdi/spec_write.hpp"

#include <unistd.h>

#include <filesystem>

#include "cdi/cdi_names.hpp"
#include "cdi/render.hpp"
#include "cdi/spec.hpp"
#include "cdi/spec_file.hpp"
#include "cdi/validate.hpp"
#include "core/fs.hpp"

namespace gpufrac::cdi {

namespace {

// The hooks in the spec must read the same config: a relative source becomes absolute.
Config with_absolute_source(Config cfg) {
  if (cfg.source.empty() || cfg.source.front() == '/' || !fs::exists(cfg.source)) return cfg;
  std::error_code ec;
  auto abs = std::filesystem::absolute(cfg.source, ec);
  if (!ec) cfg.source = abs.lexically_normal().string();
  return cfg;
}

}  // namespace

Result<SpecWritten> write_node_spec(const Inventory& inv, const Config& config) {
  const Config cfg = with_absolute_source(config);
  SpecWritten out{cfg.cdi.output, 0, {}};
  auto built = build_spec(inv, cfg, kKind);
  if (!built) return std::unexpected(built.error());
  out.warnings = built->warnings;
  if (built->spec.devices.empty()) {
    if (::unlink(out.path.c_str()) != 0 && errno != ENOENT) return sys_error("cannot remove " + out.path);
    return out;
  }
  auto json = spec_json(built->spec);
  for (const auto& p : validate_spec(json))
    if (p.severity == Severity::error)
      return internal_error("the generated spec fails validation: " + format_problem(p));
  const Format format = out.path.ends_with(".json") ? Format::json : Format::yaml;
  const std::string preload = cdi_preload_path(cfg);
  if (auto r = fs::make_dirs(fs::dirname(preload), 0755); !r) return std::unexpected(r.error());
  if (auto r = fs::write_file_atomic(preload, cdi_preload_content(), 0644); !r) return std::unexpected(r.error());
  if (auto r = write_spec_file(out.path, render(json, format, kSpecHeader)); !r) return std::unexpected(r.error());
  out.devices = built->spec.devices.size();
  return out;
}

InventoryListener spec_refresher(const Config& config) {
  return [&config](const Inventory& inv) -> Result<> {
    if (auto r = write_node_spec(inv, config); !r) return std::unexpected(r.error().wrap("CDI spec not refreshed"));
    return {};
  };
}

}  // namespace gpufrac::cdi
