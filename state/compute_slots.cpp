#include "state/compute_slots.hpp"

#include <filesystem>

#include "core/plan/plan.hpp"
#include "gpufrac/arbiter_abi.h"
#include "limits/host/arbiter_file.hpp"

namespace gpufrac {

namespace {

// Every arbiter of the node (one per GPU that ever had a compute share), by its lease file's path.
std::vector<std::string> arbiters(const Config& cfg) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cfg.state_dir + "/compute", ec)) {
    const std::string name = e.path().filename();
    if (!name.starts_with(".") && !name.ends_with(GPUFRAC_ARBITER_SLOTS_SUFFIX)) out.push_back(e.path());
  }
  return out;
}

}  // namespace

Result<> attach_compute_slots(const Config& cfg, const std::string& container_key, limits::LimitFile& file) {
  for (auto& d : file.devices) {
    if (d.compute_ppm == 0 || d.compute_ppm >= GPUFRAC_ARBITER_WHOLE) continue;  // a whole GPU: not arbitrated
    const std::string path = compute_arbiter_path(cfg, d.uuid);
    if (auto r = limits::ensure_arbiter(path, d.uuid); !r) return r;
    auto token = limits::attach_arbiter_slot(path, container_key, d.compute_ppm, d.compute_mode, d.priority);
    if (!token) return std::unexpected(token.error());
    d.compute_token = *token;
  }
  return {};
}

Result<unsigned> release_compute_slots(const Config& cfg, const std::string& container_key) {
  unsigned freed = 0;
  std::optional<Error> first;
  for (const auto& path : arbiters(cfg)) {
    auto n = limits::release_arbiter_slots(path, container_key);
    if (n)
      freed += *n;
    else if (!first)
      first = n.error();
  }
  if (first) return std::unexpected(*first);
  return freed;
}

Result<std::vector<std::string>> sweep_compute_slots(const Config& cfg, const std::vector<std::string>& booked,
                                                     std::uint64_t min_age_s) {
  std::vector<std::string> freed;
  for (const auto& path : arbiters(cfg)) {
    auto keys = limits::sweep_arbiter(path, booked, min_age_s);
    if (!keys) return std::unexpected(keys.error());
    freed.insert(freed.end(), keys->begin(), keys->end());
  }
  return freed;
}

}  // namespace gpufrac
