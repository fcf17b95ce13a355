#include "k8s/claim_spec.hpp"

#include <unistd.h>
#include <cerrno>

#include "cdi/render.hpp"
#include "cdi/spec.hpp"
#include "cdi/spec_file.hpp"
#include "core/log.hpp"
#include "core/plan/plan.hpp"
#include "core/text.hpp"
#include "exec/driver_limit_exec.hpp"
#include "state/container_mount.hpp"
#include "state/container_state.hpp"

namespace gpufrac::dra {

std::string claim_spec_path(const std::string& cdi_dir, const std::string& claim_uid) {
  return text::cat(cdi_dir, "/k8s.gpufrac.io-gpu_", claim_uid, ".yaml");
}

std::string claim_cdi_id(const std::string& claim_uid) {
  return text::cat(kCdiKind, "=", claim_uid);
}

std::string claim_files_key(const std::string& claim_uid) {
  return container_key(claim_uid, kClaimInstance);
}

Result<> write_claim_spec(const std::string& cdi_dir, const std::string& uid, const std::vector<LedgerEntry>& bookings,
                          const Inventory& inv, const Config& cfg) {
  if (auto m = mount_container_dir(cfg, claim_files_key(uid)); !m)  // the bound on what its containers write there
    log::warn("the claim's state directory is not size-limited: " + m.error().message);
  auto files = write_container_files(cfg, claim_files_key(uid), bookings, "");
  if (!files) return std::unexpected(files.error());
  std::vector<Grant> grants;
  for (const auto& b : bookings) grants.push_back(grant_of(b));
  const bool with_driver = cfg.driver.inject != DriverInject::never && !inv.driver.empty();
  auto edits = plan_spec_edits(grants, inv, cfg, claim_files_key(uid), with_driver);
  if (!edits) return std::unexpected(edits.error());
  // One createRuntime hook: the host-PID policy for the claim's containers (the shim's accounting
  // needs host pids), the driver's limits where it holds the shares (--driver-limit, below),
  // gpufrac's directory with the claim's files and, when gpufrac brings the driver, the loader cache.
  std::vector<std::string> hook_args{"--claim", uid};
  if (with_driver) hook_args.insert(hook_args.end(), {"--ld-cache", ld_cache_arg(inv.driver)});
  edits->hooks.push_back(plan_hook(cfg, "createRuntime", "createRuntime", hook_args));
  // Where the driver holds the shares, that hook also sets the claim's limits on the pod's cgroup.
  auto limits = driver_limits_wanted(bookings, inv, cfg);
  if (!limits) return std::unexpected(limits.error());
  if (*limits) edits->hooks.back().args.push_back("--driver-limit");
  cdi::Spec spec{kCdiKind, {}, {{uid, std::move(*edits)}}};
  const std::string text = cdi::render(cdi::spec_json(spec), cdi::Format::yaml,
                                       "CDI spec of a Kubernetes claim prepared by gpufrac-dra; removed at unprepare.");
  return cdi::write_spec_file(claim_spec_path(cdi_dir, uid), text);
}

Result<> remove_claim_spec(const std::string& cdi_dir, const std::string& uid, const Config& cfg) {
  const std::string path = claim_spec_path(cdi_dir, uid);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return sys_error("cannot remove " + path);
  return remove_container_files(cfg, claim_files_key(uid));
}

}  // namespace gpufrac::dra
