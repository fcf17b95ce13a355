#include "limits/host/region_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

#include "core/fs.hpp"
#include "core/shared_map.hpp"
#include "gf_proc.h"
#include "gf_region.h"

namespace gpufrac::limits {

namespace {

constexpr std::size_t kRegionSize = sizeof(gpufrac_region);

using Mapping = fs::SharedMapping;

// The region mapped, never with a hole (core/shared_map.hpp): a region an older gpufrac wrote as
// its header and a hole is filled first; on a full filesystem it is not mapped.
Result<Mapping> map_region(const std::string& path, bool writable) {
  fs::UniqueFd fd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return sys_error("cannot open usage region " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat usage region " + path);
  if (!S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != kRegionSize) {
    return internal_error("usage region " + path + ": " + std::to_string(st.st_size) +
                          " bytes; accepted: a regular file of " + std::to_string(kRegionSize) +
                          " bytes (gpufrac region version " + std::to_string(GPUFRAC_REGION_VERSION) + ")");
  }
  auto m = fs::map_allocated(fd.get(), kRegionSize, writable, path);
  if (!m && fs::no_space(m.error().err)) {
    auto e = sys_error("usage region " + path + " has a hole (written by an older gpufrac) that cannot be allocated",
                       m.error().err);
    e.error().message += "; it is not mapped (touching the hole would be SIGBUS): free space on the filesystem of " +
                         fs::dirname(path) + ", then try again";
    return e;
  }
  return m;
}

std::uint32_t load32(const std::uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
std::uint64_t load64(const std::uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

// An all-zero (never used) region is valid; any other header must match this build's layout.
// Version 1 (containers started before an upgrade) has the same layout; its shims leave
// usage_changes alone, and counting in it (a reclaim here) is harmless to them.
Result<bool> check_header(const gpufrac_region* r, const std::string& path) {
  const std::uint32_t magic = load32(&r->magic), version = load32(&r->version);
  if (magic == 0) return false;
  if (magic != GPUFRAC_REGION_MAGIC || (version != GPUFRAC_REGION_VERSION && version != 1) ||
      load32(&r->region_size) != kRegionSize || load32(&r->slot_count) != GPUFRAC_MAX_SLOTS) {
    return internal_error("usage region " + path + ": not a gpufrac region of version " +
                          std::to_string(GPUFRAC_REGION_VERSION) + " or 1 (magic, version or size differ)");
  }
  return true;
}

void add_slot(const gpufrac_slot& s, bool live, RegionUsage& out) {
  const std::uint32_t bypassed = __atomic_load_n(&s.compute_bypassed, __ATOMIC_SEQ_CST);
  for (int d = 0; d < GPUFRAC_MAX_DEVICES; d++) {
    const std::uint64_t v = load64(&s.used[d]);
    (live ? out.devices[d].used : out.devices[d].stale) += v;
    if ((bypassed >> d & 1u) != 0) out.devices[d].compute_bypassed = true;
  }
}

void trim_devices(const gpufrac_region* r, RegionUsage& out) {
  std::size_t n = std::min<std::uint32_t>(r->device_count, GPUFRAC_MAX_DEVICES);
  for (std::size_t d = 0; d < out.devices.size(); d++) {
    if (out.devices[d].used != 0 || out.devices[d].stale != 0) n = std::max(n, d + 1);
  }
  out.devices.resize(n);
}

}  // namespace

Result<> create_region(const std::string& path, const LimitFile& file) {
  if (file.devices.size() > GPUFRAC_MAX_DEVICES) {
    return internal_error("usage region " + path + ": " + std::to_string(file.devices.size()) +
                          " devices; accepted: at most " + std::to_string(GPUFRAC_MAX_DEVICES));
  }
  // The header is built and written, the slots are zeros with their storage allocated now: a slot
  // page first touched through a mapping on a full filesystem would be SIGBUS (core/shared_map.hpp).
  std::string header(offsetof(gpufrac_region, slots), '\0');
  auto put = [&header](std::size_t offset, const void* value, std::size_t size) {
    std::memcpy(header.data() + offset, value, size);
  };
  const std::uint32_t fields[] = {GPUFRAC_REGION_MAGIC, GPUFRAC_REGION_VERSION, kRegionSize, GPUFRAC_MAX_SLOTS,
                                  static_cast<std::uint32_t>(file.devices.size())};
  static_assert(offsetof(gpufrac_region, device_count) == 4 * sizeof(std::uint32_t), "header fields in order");
  put(offsetof(gpufrac_region, magic), fields, sizeof fields);
  for (std::size_t i = 0; i < file.devices.size(); i++) {
    const auto& d = file.devices[i];
    if (d.uuid.size() >= GPUFRAC_UUID_SIZE)
      return internal_error("usage region " + path + ": UUID too long: " + d.uuid);
    put(offsetof(gpufrac_region, limit) + i * sizeof(std::uint64_t), &d.bytes, sizeof(std::uint64_t));
    put(offsetof(gpufrac_region, uuid) + i * GPUFRAC_UUID_SIZE, d.uuid.data(), d.uuid.size());
  }
  if (auto w = fs::write_file_atomic_allocated(path, header, kRegionSize, 0666); !w) {
    if (w.error().err != 0) return sys_error("cannot create the usage region " + path, w.error().err);
    return wrap_error(w, "while creating the usage region");
  }
  return {};
}

Result<RegionUsage> read_region_usage(const std::string& path, const std::string& proc_root) {
  auto m = map_region(path, false);
  if (!m) return std::unexpected(m.error());
  const gpufrac_region* r = m->as<gpufrac_region>();
  auto valid = check_header(r, path);
  if (!valid) return std::unexpected(valid.error());
  return sum_region(r, proc_root);
}

RegionUsage sum_region(const gpufrac_region* r, const std::string& proc_root) {
  RegionUsage out;
  out.devices.resize(GPUFRAC_MAX_DEVICES);
  for (int d = 0; d < GPUFRAC_MAX_DEVICES; d++) {
    out.devices[d].uuid.assign(r->uuid[d], strnlen(r->uuid[d], GPUFRAC_UUID_SIZE));
    out.devices[d].limit = r->limit[d];
  }
  const unsigned in_use = gf_region_slots_in_use(r);
  for (unsigned i = 0; i < in_use; i++) {
    const std::uint64_t owner = load64(&r->slots[i].owner);
    if (owner == 0) continue;
    const bool live =
        gpufrac_owner_state(owner) == GPUFRAC_SLOT_OWNED &&
        gf_proc_liveness(proc_root.c_str(), gpufrac_owner_pid(owner), gpufrac_owner_start(owner)) != GF_DEAD;
    (live ? out.live_processes : out.dead_slots)++;
    add_slot(r->slots[i], live, out);
  }
  trim_devices(r, out);
  return out;
}

Result<RegionMapping> map_region_rw(const std::string& path) {
  auto m = map_region(path, true);
  if (!m) return std::unexpected(m.error());
  auto valid = check_header(m->as<gpufrac_region>(), path);
  if (!valid) return std::unexpected(valid.error());
  return std::make_unique<fs::SharedMapping>(std::move(*m));
}

Result<unsigned> reclaim_region(const std::string& path, const std::string& proc_root) {
  gf_proc_stat self{};
  const std::string self_stat = proc_root + "/self/stat";
  if (gf_proc_stat_read(self_stat.c_str(), &self) != 0) {
    return internal_error("cannot read " + self_stat + "; accepted: the host's /proc (reclaim needs process liveness)");
  }
  auto m = map_region(path, true);
  if (!m) return std::unexpected(m.error());
  auto valid = check_header(m->as<gpufrac_region>(), path);
  if (!valid) return std::unexpected(valid.error());
  if (!*valid) return 0u;
  const std::uint64_t me = gpufrac_owner(static_cast<std::uint64_t>(::getpid()), self.start, 0);
  return gf_region_reclaim(m->as<gpufrac_region>(), me, GF_CHECK_PROC, proc_root.c_str());
}

}  // namespace gpufrac::limits
