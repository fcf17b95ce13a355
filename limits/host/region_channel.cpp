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

Result<> read_region_reading(int fd, const std::string& path, unsigned device, gpufrac_region& buf, RegionReading& out,
                             const std::string& proc_root) {
  out = RegionReading{};
  if (auto r = read_region_head(fd, path, buf); !r) return r;
  auto valid = check_region_header(buf, path);
  if (!valid) return std::unexpected(valid.error());
  if (!*valid) return {};
  const unsigned n = gf_region_slots_in_use(&buf);
  const unsigned dev = std::min<unsigned>(device, GPUFRAC_MAX_DEVICES - 1);
  out.owners.resize(n);
  out.used.resize(n);
  out.live.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    out.owners[i] = buf.slots[i].owner;
    out.used[i] = buf.slots[i].used[dev];
    out.live[i] = out.owners[i] != 0 && slot_owner_live(out.owners[i], i, fd, proc_root) ? 1 : 0;
  }
  out.reclaim_asked = buf.reclaim_asked;
  out.reclaim_answered = buf.reclaim_answered;
  out.reclaim_device = buf.reclaim_device;
  out.reclaim_bytes = buf.reclaim_bytes;
  return {};
}

std::uint64_t live_use(const RegionReading& reading) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < reading.owners.size() && i < reading.live.size(); ++i) {
    if (reading.live[i] == 0) continue;
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
