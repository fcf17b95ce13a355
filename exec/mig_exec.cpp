#include "exec/mig_exec.hpp"

#include "core/allocator/allocator.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "exec/cli_exec.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac {

Annotations request_annotations(const Annotations& all, bool aliases) {
  Annotations out;
  for (const auto& [k, v] : all) {
    const bool alias =
        k == annotation::kAliasFraction || k == annotation::kAliasMemory || k == annotation::kAliasClearml;
    if (k.starts_with(annotation::kPrefix) || (aliases && alias)) out[k] = v;
  }
  return out;
}

std::vector<std::string> provision_argv(const Config& cfg, const ProvisionCall& c) {
  std::vector<std::string> argv{cfg.cli_path,     "mig",          "provision",        "--container",
                                c.container_id,   "--device-key", c.device_key,       "--pid",
                                text::cat(c.pid), "--source",     to_string(c.source)};
  for (const auto& [k, v] : c.annotations) {
    argv.push_back("--annotation");
    argv.push_back(k + "=" + v);
  }
  if (!c.instance.empty()) argv.insert(argv.end(), {"--instance", c.instance});
  return argv;
}

std::vector<std::string> provision_env(const Config& cfg, char** environ_in) {
  return cli_env(cfg, environ_in);
}

Result<std::string> run_mig_provision(const Config& cfg, const ProvisionCall& call) {
  return run_cli(cfg, provision_argv(cfg, call));
}

bool provisioning_may_help(const Error& refusal, const Request& request, const Inventory& inventory,
                           const Config& cfg) {
  return refusal.kind == ErrorKind::user && dynamic_mig_applies(request, inventory, cfg.allocation, cfg.mig);
}

Result<Inventory> provision_and_reread(const Config& cfg, const ProvisionCall& call) {
  auto grant = run_mig_provision(cfg, call);
  if (!grant) return std::unexpected(grant.error());
  log::info("dynamic MIG: " + grant->substr(0, grant->find('\n')));
  return inventory_for_allocation(cfg);
}

}  // namespace gpufrac
