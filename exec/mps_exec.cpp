#include "exec/mps_exec.hpp"

#include <ctime>

#include "core/ledger/ledger.hpp"
#include "core/ledger/ledger_mps.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "exec/cli_exec.hpp"

namespace gpufrac {

bool is_sm_request(const Request& r) {
  return r.compute_mode == ComputeMode::sm;
}

Annotations annotations_of(const Request& r) {
  Annotations out;
  for (const auto& item : text::split(r.describe(), ' ')) {
    const auto eq = item.find('=');
    if (eq != std::string::npos) out[annotation::kPrefix + item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

std::vector<std::string> mps_provision_argv(const Config& cfg, const ProvisionCall& call) {
  auto argv = provision_argv(cfg, call);  // `<cli> mig provision ...`: the same options
  argv[1] = "mps";
  return argv;
}

Result<std::string> run_mps_provision(const Config& cfg, const ProvisionCall& call) {
  auto out = run_cli(cfg, mps_provision_argv(cfg, call));
  if (out) log::info("mps provision: " + out->substr(0, out->find('\n')));
  return out;
}

bool mps_reclaim_may_help(const Error& refusal, const Request& request, const Config& cfg) {
  if (refusal.kind != ErrorKind::user || is_sm_request(request)) return false;
  auto state = Ledger(LedgerOptions::from(cfg)).read();
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  // Any GPU idle in MPS mode, whatever its idle time: the timeout only keeps a daemon warm for the
  // next SM share, it never keeps a time share out.
  return state && !expired_mps_gpus(*state, 0, now).empty();
}

}  // namespace gpufrac
