#include "limits/host/region_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "core/fs.hpp"
#include "core/shared_map.hpp"
#include "gf_lock.h"
#include "gf_proc.h"
#include "gf_region.h"
#include "limits/host/region_guard.hpp"
#include "limits/host/region_read.hpp"

namespace gpufrac::limits {

namespace {

constexpr std::size_t kRegionSize = sizeof(gpufrac_region);

using Mapping = fs::SharedMapping;

// The region mapped read-write, never with a hole (core/shared_map.hpp): a region an older gpufrac
// wrote as its header and a hole is filled first; on a full filesystem it is not mapped. Only
// reclaim_region maps it, for its compare-and-swaps, with every access guarded (region_guard.hpp).
Result<Mapping> map_region(int fd, const std::string& path) {
  auto m = fs::map_allocated(fd, kRegionSize, true, path);
  if (!m && fs::no_space(m.error().err)) {
    auto e = sys_error("usage region " + path + " has a hole (written by an older gpufrac) that cannot be allocated",
                       m.error().err);
    e.error().message += "; it is not mapped (touching the hole would be SIGBUS): free space on the filesystem of " +
                         fs::dirname(path) + ", then try again";
    return e;
  }
  return m;
}

std::uint64_t load64(const std::uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
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

// Whether the owner of slot i (owner word o, from a copy) is dead: an OWNED slot by its pid (as
// gf_region_reclaim decides with GF_CHECK_PROC); a LOCKED one when no one holds its lock byte; a
// RECLAIMING one when its reclaimer is gone both ways (a shim reclaimer holds the byte; an older
// one is judged by its pid).
bool owner_dead(std::uint64_t o, unsigned i, int fd, const std::string& proc_root) {
  const std::uint64_t pid = gpufrac_owner_pid(o);
  const unsigned state = static_cast<unsigned>(gpufrac_owner_state(o));
  if (state == GPUFRAC_SLOT_LOCKED) return gf_slot_lock_held(fd, i) == 0;
  if (state == GPUFRAC_SLOT_RECLAIMING && gf_slot_lock_held(fd, i) != 0) return false;
  return pid == 0 || gf_proc_liveness(proc_root.c_str(), pid, gpufrac_owner_start(o)) == GF_DEAD;
}

// The slots of a copy whose owner is dead, with the owner word seen: the guarded reclaim swaps
// only a slot that still holds it.
std::vector<DeadSlot> dead_slots(const gpufrac_region& r, std::uint64_t me, int fd, const std::string& proc_root) {
  std::vector<DeadSlot> out;
  const unsigned in_use = gf_region_slots_in_use(&r);
  for (unsigned i = 0; i < in_use; i++) {
    const std::uint64_t o = r.slots[i].owner;
    if (o == 0) continue;
    // A pid of this process is its own (a LOCKED owner's pid is in another namespace's numbering).
    if (gpufrac_owner_state(o) != GPUFRAC_SLOT_LOCKED && gpufrac_owner_pid(o) == gpufrac_owner_pid(me)) continue;
    if (owner_dead(o, i, fd, proc_root)) out.push_back({i, o});
  }
  return out;
}

std::unexpected<Error> damaged_while_mapped(const std::string& path) {
  return std::unexpected(Error{"usage region " + path +
                                   ": changed size while its dead slots were reclaimed (its container truncated it?); "
                                   "accepted: a regular file of " +
                                   std::to_string(kRegionSize) + " bytes",
                               EBADMSG, ErrorKind::internal});
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
  auto fd = open_region(path, false);
  if (!fd) return std::unexpected(fd.error());
  fs::UniqueFd owned(*fd);
  auto copy = read_region_copy(owned.get(), path);
  if (!copy) return std::unexpected(copy.error());
  auto valid = check_region_header(**copy, path);
  if (!valid) return std::unexpected(valid.error());
  return sum_region(copy->get(), proc_root, owned.get());
}

RegionUsage sum_region(const gpufrac_region* r, const std::string& proc_root, int fd) {
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
    const bool live = slot_owner_live(owner, i, fd, proc_root);
    (live ? out.live_processes : out.dead_slots)++;
    add_slot(r->slots[i], live, out);
  }
  trim_devices(r, out);
  return out;
}

Result<unsigned> reclaim_region(const std::string& path, const std::string& proc_root) {
  gf_proc_stat self{};
  const std::string self_stat = proc_root + "/self/stat";
  if (gf_proc_stat_read(self_stat.c_str(), &self) != 0) {
    return internal_error("cannot read " + self_stat + "; accepted: the host's /proc (reclaim needs process liveness)");
  }
  auto fd = open_region(path, true);
  if (!fd) return std::unexpected(fd.error());
  fs::UniqueFd owned(*fd);
  auto copy = read_region_copy(owned.get(), path);
  if (!copy) return std::unexpected(copy.error());
  auto valid = check_region_header(**copy, path);
  if (!valid) return std::unexpected(valid.error());
  const std::uint64_t me = gpufrac_owner(static_cast<std::uint64_t>(::getpid()), self.start, 0);
  const auto dead = dead_slots(**copy, me, owned.get(), proc_root);
  if (!*valid || dead.empty()) return 0u;  // nothing to change: nothing mapped
  auto m = map_region(owned.get(), path);
  if (!m) return std::unexpected(m.error());
  install_region_guard();
  const auto n = reclaim_guarded(m->as<gpufrac_region>(), dead, me, owned.get());
  if (!n) return damaged_while_mapped(path);
  return *n;
}

}  // namespace gpufrac::limits
