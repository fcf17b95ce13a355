#include "state/compute_slots.hpp"

#include <filesystem>

#include "core/log.hpp"
#include "core/plan/plan.hpp"
#include "core/text.hpp"
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
    auto repaired = limits::ensure_arbiter(path, d.uuid);
    if (!repaired) return std::unexpected(repaired.error());
    if (!repaired->phrases.empty())  // a container resized the file or changed its mode: one line
      log::warn(text::cat("compute arbiter ", path, ": ", text::join(repaired->phrases, "; "), "; repaired in place"));
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

Result<ComputeSweep> sweep_compute_slots(const Config& cfg, const std::vector<std::string>& booked,
                                         std::uint64_t min_age_s) {
  ComputeSweep out;
  for (const auto& path : arbiters(cfg)) {
    auto r = limits::sweep_arbiter(path, booked, min_age_s);
    if (!r) return std::unexpected(r.error());
    out.freed.insert(out.freed.end(), r->freed.begin(), r->freed.end());
    const std::string uuid = std::filesystem::path(path).filename();
    if (r->removed) out.removed.push_back(uuid);
    if (!r->repaired.empty()) {
      out.repaired.push_back(uuid + ": " + text::join(r->repaired, "; "));
      log::warn(text::cat("compute arbiter ", path, ": ", text::join(r->repaired, "; "), "; repaired in place"));
    }
  }
  return out;
}

}  // namespace gpufrac
