#include "hook/refusal.hpp"

#include "cdi/device_names.hpp"
#include "core/request/env_request.hpp"
#include "core/request/unknown_keys.hpp"

namespace gpufrac::hook {

metrics::Refusal refusal_of(const Invocation& inv, const Error& e) {
  using metrics::Refusal;
  if (e.kind == ErrorKind::internal || inv.args.attach) return Refusal::other;
  if (!bundle::check_host_pid(inv.spec, inv.cfg.require_host_pid, inv.cfg.proc_root)) return Refusal::host_pid;
  if (!inv.state.pid) return Refusal::malformed;
  if (inv.cfg.requests.unknown == UnknownNames::refuse &&
      !unknown_request_names(inv.spec.annotations, inv.spec.env).empty())
    return Refusal::malformed;
  if (inv.args.cdi_device.empty())
    return parse_container_request(inv.spec.annotations, inv.spec.env, inv.cfg.aliases) ? Refusal::capacity
                                                                                        : Refusal::malformed;
  return cdi::request_for_cdi_device(inv.args.cdi_device, inv.inventory) ? Refusal::capacity : Refusal::malformed;
}

}  // namespace gpufrac::hook
