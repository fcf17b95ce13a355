// Running the SM-sharing provisioner from a static front-end (gpufrac-hook, gpufrac-runtime), which
// must never load NVML: `<cli.path> mps provision ...` (nvml/mps_provision.hpp), executed as
// exec/cli_exec.hpp runs every helper. Every SM share goes through it (its GPU's MPS daemon must
// run before the container does), and so does a time share refused while a GPU in MPS mode sits
// idle, with no SM share left (the provisioner stops that daemon and switches the GPU back at once,
// whatever compute.mps-idle-timeout says). A container that asks for neither never comes here.
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/request/request.hpp"
#include "exec/mig_exec.hpp"

namespace gpufrac {

bool is_sm_request(const Request& request);

// The request as annotations, in its canonical form (Request::describe(): gpufrac.io/compute=30,
// gpufrac.io/compute-mode=sm, gpufrac.io/gpu=0): what a CDI device's request is handed over as.
Annotations annotations_of(const Request& request);

// The argv run_mps_provision uses (for tests).
std::vector<std::string> mps_provision_argv(const Config& cfg, const ProvisionCall& call);
// Runs the provisioner, which books; returns its stdout (one JSON object).
Result<std::string> run_mps_provision(const Config& cfg, const ProvisionCall& call);

// Whether a time share refused with `refusal` may fit once idle MPS daemons are stopped: a user
// error, and the ledger holds a GPU in MPS mode without an SM share (however long it has been idle).
bool mps_reclaim_may_help(const Error& refusal, const Request& request, const Config& cfg);

}  // namespace gpufrac
