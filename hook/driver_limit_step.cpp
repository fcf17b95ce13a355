#include "hook/driver_limit_step.hpp"

#include "core/enforcement/nvidia_memory_env.hpp"
#include "core/fault.hpp"
#include "core/text.hpp"
#include "exec/driver_limit_exec.hpp"

namespace gpufrac::hook {

namespace {

Result<> run(const Invocation& inv, LimitCall call) {
  if (!inv.state.pid) return user_error("the OCI state on stdin has no pid; the driver limit needs the container's");
  call.pid = static_cast<pid_t>(*inv.state.pid);
  if (auto r = run_driver_limit_set(inv.cfg, call); !r) return r;
  fault::point("hook-after-driver-limit");
  return {};
}

}  // namespace

Result<> set_driver_limits(const Invocation& inv, const std::vector<LedgerEntry>& bookings) {
  if (auto r = check_nvidia_memory_env(inv.spec.env, bookings, inv.cfg); !r) return r;
  auto wanted = driver_limits_wanted(bookings, inv.inventory, inv.cfg);
  if (!wanted) return std::unexpected(wanted.error());
  if (!*wanted) return {};
  return run(inv, LimitCall{inv.state.id, inv.instance, false, 0});
}

Result<> set_told_driver_limits(const Invocation& inv) {
  if (!inv.args.claim.empty()) return run(inv, LimitCall{inv.args.claim, "", true, 0});
  return run(inv, LimitCall{inv.state.id, inv.instance, false, 0});
}

}  // namespace gpufrac::hook
