// Running the dynamic MIG provisioner from a static front-end (gpufrac-hook, gpufrac-runtime),
// which must never load NVML: `<cli.path> mig provision ...` (nvml/mig_provision.hpp) is executed
// as exec/cli_exec.hpp runs every helper (clean environment, no shell). Its stdout is the grant as
// JSON; on failure its "gpufrac: ..." line becomes the error, user or internal as its exit status
// (1 or 2) says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

struct ProvisionCall {
  std::string container_id;
  std::string device_key;
  std::int64_t pid = 0;  // 0: pending (the wrapper books before the container exists)
  BookingSource source = BookingSource::hook;
  Annotations annotations;  // the request's keys (request_annotations)
  std::string instance;     // LedgerEntry::instance ("" leaves --instance out)
};

// The annotations a request is parsed from: gpufrac.io/* and, with aliases, the alias keys.
Annotations request_annotations(const Annotations& all, bool aliases);

// The argv and environment run_mig_provision uses (for tests).
std::vector<std::string> provision_argv(const Config& cfg, const ProvisionCall& call);
std::vector<std::string> provision_env(const Config& cfg, char** environ_in);

// Runs the provisioner and returns its stdout (one JSON object).
Result<std::string> run_mig_provision(const Config& cfg, const ProvisionCall& call);

// Whether a reservation refused with `refusal` goes to the provisioner: a user error (no room)
// for a request a new MIG instance on a dynamic GPU could serve (dynamic_mig_applies).
bool provisioning_may_help(const Error& refusal, const Request& request, const Inventory& inventory, const Config& cfg);
// Runs the provisioner (which books) and returns the inventory read again, which lists the new
// instance and its device nodes.
Result<Inventory> provision_and_reread(const Config& cfg, const ProvisionCall& call);

}  // namespace gpufrac
