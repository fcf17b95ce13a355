#include "limits/host/region_channel.hpp"

#include <algorithm>
#include <cstddef>

#include "gf_proc.h"
#include "gf_region.h"
#include "limits/host/region_read.hpp"

namespace gpufrac::limits {

namespace {

template <class T>
Result<> store(int fd, const std::string& path, std::size_t offset, T value) {
  static_assert(sizeof(T) <= 8);
  return write_region_field(fd, path, offset, &value, sizeof value);
}

}  // namespace

Result<> read_region_reading(int fd, const std::string& path, unsigned device, gpufrac_region& buf,
                             RegionReading& out) {
  out = RegionReading{};
  if (auto r = read_region_head(fd, path, buf); !r) return r;
  auto valid = check_region_header(buf, path);
  if (!valid) return std::unexpected(valid.error());
  if (!*valid) return {};
  const unsigned n = gf_region_slots_in_use(&buf);
  const unsigned dev = std::min<unsigned>(device, GPUFRAC_MAX_DEVICES - 1);
  out.owners.resize(n);
  out.used.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    out.owners[i] = buf.slots[i].owner;
    out.used[i] = buf.slots[i].used[dev];
  }
  out.reclaim_asked = buf.reclaim_asked;
  out.reclaim_answered = buf.reclaim_answered;
  out.reclaim_device = buf.reclaim_device;
  out.reclaim_bytes = buf.reclaim_bytes;
  return {};
}

std::uint64_t live_use(const RegionReading& reading, const std::string& proc_root) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < reading.owners.size(); ++i) {
    const std::uint64_t owner = reading.owners[i];
    if (owner == 0 || gpufrac_owner_state(owner) != GPUFRAC_SLOT_OWNED) continue;
    if (gf_proc_liveness(proc_root.c_str(), gpufrac_owner_pid(owner), gpufrac_owner_start(owner)) == GF_DEAD) continue;
    sum = reading.used[i] > UINT64_MAX - sum ? UINT64_MAX : sum + reading.used[i];
  }
  return sum;
}

Result<> publish_region(int fd, const std::string& path, std::uint32_t beat, bool burst, std::uint8_t device,
                        std::uint64_t ceiling) {
  if (burst) {
    if (auto r = store(fd, path, offsetof(gpufrac_region, burst_ceiling), ceiling); !r) return r;
    if (auto r = store(fd, path, offsetof(gpufrac_region, burst_device), device); !r) return r;
  }
  return store(fd, path, offsetof(gpufrac_region, reclaimer_beat), beat);
}

Result<> answer_region(int fd, const std::string& path, std::uint32_t answered, std::uint8_t answer) {
  if (auto r = store(fd, path, offsetof(gpufrac_region, reclaim_answer), answer); !r) return r;
  return store(fd, path, offsetof(gpufrac_region, reclaim_answered), answered);
}

}  // namespace gpufrac::limits
