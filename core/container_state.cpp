#include "core/container_state.hpp"

#include <filesystem>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "limits/host/limit_file.hpp"
#include "limits/host/region_file.hpp"
#include "limits/include/gpufrac/limits_abi.h"

namespace gpufrac {

using limits::LimitFile;
using limits::create_region;
using limits::render_limit_file;

namespace {

LimitFile limit_file_for(const std::string& container_id, const std::vector<LedgerEntry>& bookings) {
  LimitFile f;
  f.container = container_id;
  f.region = GPUFRAC_CONTAINER_USAGE;
  for (const auto& b : bookings) f.devices.push_back({b.device_uuid, b.bytes});
  return f;
}

}  // namespace

Result<ContainerFiles> write_container_files(const Config& cfg, const std::string& container_id,
                                             const std::vector<LedgerEntry>& bookings, const std::string& image_preload) {
  if (auto r = validate_container_id(container_id); !r) return std::unexpected(r.error());
  if (bookings.empty() || bookings.size() > GPUFRAC_MAX_DEVICES)
    return internal_error(text::cat("container ", container_id, " has ", bookings.size(), " bookings; 1 to ",
                                    GPUFRAC_MAX_DEVICES, " are supported"));
  ContainerFiles files = container_files(cfg, container_id);
  if (auto r = fs::make_dirs(files.dir, 0755); !r) return std::unexpected(r.error());
  LimitFile limit_file = limit_file_for(container_id, bookings);
  if (auto r = fs::write_file_atomic(files.limits, render_limit_file(limit_file), 0644); !r) return std::unexpected(r.error());
  if (!fs::exists(files.usage))
    if (auto r = create_region(files.usage, limit_file); !r) return std::unexpected(r.error());
  if (auto r = fs::write_file_atomic(files.preload, render_preload(image_preload), 0644); !r) return std::unexpected(r.error());
  return files;
}

Result<> remove_container_files(const Config& cfg, const std::string& container_id) {
  if (auto r = validate_container_id(container_id); !r) return r;
  std::error_code ec;
  std::filesystem::remove_all(cfg.container_dir(container_id), ec);
  if (ec) return internal_error("cannot remove " + cfg.container_dir(container_id) + ": " + ec.message());
  return {};
}

}  // namespace gpufrac
