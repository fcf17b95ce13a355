#include "state/container_state.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/fs.hpp"
#include "core/quantity.hpp"
#include "core/text.hpp"
#include "gpufrac/limits_abi.h"
#include "limits/host/limit_file.hpp"
#include "limits/host/region_file.hpp"
#include "state/compute_slots.hpp"
#include "state/container_mount.hpp"

namespace gpufrac {

using limits::create_region;
using limits::LimitFile;
using limits::render_limit_file;

namespace {

// Adds a booking's compute share to its device's limit: weights add up (at most the whole GPU);
// the mode and priority are those of the device's first booking with a share.
void add_compute(limits::DeviceLimit& d, const LedgerEntry& b) {
  if (is_sm_share(b.compute_ppm, b.compute_mode)) {  // an MPS client: no arbiter, an "mps" line
    d.sm_ppm = std::min(kWholeGpuComputePpm, d.sm_ppm + b.compute_ppm);
    return;
  }
  if (b.compute_ppm == 0) return;
  if (d.compute_ppm == 0) {
    d.compute_mode = b.compute_mode;
    d.priority = b.priority;
  }
  d.compute_ppm = std::min(kWholeGpuComputePpm, d.compute_ppm + b.compute_ppm);
}

LimitFile limit_file_for(const std::string& container_id, const std::vector<LedgerEntry>& bookings) {
  LimitFile f;
  f.container = container_id;
  f.region = GPUFRAC_CONTAINER_USAGE;
  // Two bookings of one device (e.g. two CDI shares of the same GPU) add up to one limit.
  for (const auto& b : bookings) {
    auto same =
        std::find_if(f.devices.begin(), f.devices.end(), [&](const auto& d) { return d.uuid == b.device_uuid; });
    if (same == f.devices.end()) same = f.devices.insert(f.devices.end(), limits::DeviceLimit{b.device_uuid, 0});
    same->bytes = saturating_add(same->bytes, b.limit());
    same->request = saturating_add(same->request, b.bytes);
    same->wait_ms = std::max(same->wait_ms, b.wait_ms);
    add_compute(*same, b);
  }
  // A "burst" line only where the limit is above what is booked.
  for (auto& d : f.devices)
    if (d.request == d.bytes) d.request = 0;
  return f;
}

// Truncates and rewrites an existing file (same inode), then fsyncs it.
Result<> rewrite_in_place(const std::string& path, std::string_view content) {
  fs::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return sys_error("cannot rewrite " + path);
  if (auto r = fs::write_all(fd.get(), content, path); !r) return r;
  if (::fsync(fd.get()) != 0) return sys_error("cannot fsync " + path);
  return {};
}

Result<> write_file(const std::string& path, std::string_view content, FileUpdate update) {
  return update == FileUpdate::in_place ? rewrite_in_place(path, content) : fs::write_file_atomic(path, content, 0644);
}

// The limit file, the usage region (only when missing: an existing one keeps its live counts) and
// the preload file, in that order.
Result<> write_files(const ContainerFiles& files, const LimitFile& limit_file, const std::string& image_preload,
                     FileUpdate update) {
  if (auto r = fs::make_dirs(files.dir, 0755); !r) return r;
  if (auto r = write_file(files.limits, render_limit_file(limit_file), update); !r) return r;
  if (!fs::exists(files.usage))
    if (auto r = create_region(files.usage, limit_file); !r) return r;
  return write_file(files.preload, render_preload(image_preload), update);
}

}  // namespace

Result<ContainerFiles> write_container_files(const Config& cfg, const std::string& container_key,
                                             const std::vector<LedgerEntry>& bookings, const std::string& image_preload,
                                             FileUpdate update) {
  if (auto r = validate_container_key(container_key); !r) return std::unexpected(r.error());
  if (bookings.empty() || bookings.size() > GPUFRAC_MAX_DEVICES)
    return internal_error(text::cat("container ", container_key, " has ", bookings.size(), " bookings; 1 to ",
                                    GPUFRAC_MAX_DEVICES, " are supported"));
  ContainerFiles files = container_files(cfg, container_key);
  LimitFile limit_file = limit_file_for(bookings.front().container_id, bookings);
  if (auto r = attach_compute_slots(cfg, container_key, limit_file); !r)
    return std::unexpected(fs::state_dir_full(r.error(), cfg.state_dir));
  if (auto r = write_files(files, limit_file, image_preload, update); !r)
    return std::unexpected(fs::state_dir_full(r.error(), cfg.state_dir));
  return files;
}

Result<> remove_container_files(const Config& cfg, const std::string& container_key) {
  if (auto r = validate_container_key(container_key); !r) return r;
  auto released = release_compute_slots(cfg, container_key);  // the files go even if this fails
  if (auto r = unmount_container_dir(cfg.container_dir(container_key)); !r) return r;
  std::error_code ec;
  std::filesystem::remove_all(cfg.container_dir(container_key), ec);
  if (ec) return internal_error("cannot remove " + cfg.container_dir(container_key) + ": " + ec.message());
  if (!released) return std::unexpected(released.error());
  return {};
}

}  // namespace gpufrac
