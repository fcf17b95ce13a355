#include "state/compute_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include <filesystem>

#include "core/fs.hpp"
#include "core/log.hpp"
#include "core/plan/plan.hpp"
#include "core/text.hpp"
#include "gpufrac/arbiter_abi.h"
#include "limits/host/arbiter_file.hpp"
#include "state/compute_mount.hpp"

namespace gpufrac {

namespace {

constexpr std::string_view kDirSuffix = ".d";

// Holds <state-dir>/compute/.lock (flock): a booking's mount of a GPU's arbiter directory and gc's
// removal of it do not interleave.
Result<fs::UniqueFd> lock_compute(const Config& cfg) {
  const std::string dir = cfg.state_dir + "/compute";
  if (auto r = fs::make_dirs(dir, 0755); !r) return std::unexpected(r.error());
  fs::UniqueFd fd(::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) return sys_error("cannot open " + dir + "/.lock");
  if (::flock(fd.get(), LOCK_EX) != 0) return sys_error("cannot lock " + dir + "/.lock");
  return fd;
}

}  // namespace

std::vector<std::string> compute_arbiters(const Config& cfg) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cfg.state_dir + "/compute", ec)) {
    const std::string name = e.path().filename();
    if (name.starts_with(".") || name.ends_with(GPUFRAC_ARBITER_SLOTS_SUFFIX)) continue;
    if (name.ends_with(kDirSuffix))  // <uuid>.d: the GPU's tmpfs
      out.push_back(e.path() / name.substr(0, name.size() - kDirSuffix.size()));
    else if (e.is_regular_file(ec))  // a lease file of the layout before the per-GPU tmpfs
      out.push_back(e.path());
  }
  return out;
}

Result<> attach_compute_slots(const Config& cfg, const std::string& container_key, limits::LimitFile& file) {
  std::optional<fs::UniqueFd> lock;
  for (auto& d : file.devices) {
    if (d.compute_ppm == 0 || d.compute_ppm >= GPUFRAC_ARBITER_WHOLE) continue;  // a whole GPU: not arbitrated
    if (!lock) {
      auto l = lock_compute(cfg);
      if (!l) return std::unexpected(l.error());
      lock = std::move(*l);
    }
    if (auto m = mount_compute_dir(compute_arbiter_dir(cfg, d.uuid)); !m) return m;
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
  for (const auto& path : compute_arbiters(cfg)) {
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
  auto lock = lock_compute(cfg);
  if (!lock) return std::unexpected(lock.error());
  ComputeSweep out;
  for (const auto& path : compute_arbiters(cfg)) {
    auto r = limits::sweep_arbiter(path, booked, min_age_s);
    if (!r) return std::unexpected(r.error());
    out.freed.insert(out.freed.end(), r->freed.begin(), r->freed.end());
    const std::string uuid = std::filesystem::path(path).filename();
    if (r->removed) out.removed.push_back(uuid);
    const std::string dir = fs::dirname(path);
    if (r->removed && dir.ends_with(kDirSuffix))  // the GPU's tmpfs goes with its last share
      if (auto u = unmount_compute_dir(dir); !u) return std::unexpected(u.error());
    if (!r->repaired.empty()) {
      out.repaired.push_back(uuid + ": " + text::join(r->repaired, "; "));
      log::warn(text::cat("compute arbiter ", path, ": ", text::join(r->repaired, "; "), "; repaired in place"));
    }
  }
  return out;
}

}  // namespace gpufrac
