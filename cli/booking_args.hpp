// The options a booking subcommand takes (`gpufrac ledger reserve`, `gpufrac mig provision`) and
// the JSON both print for the grant, so the two stay one shape.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/ledger/ledger.hpp"

namespace gpufrac::cli {

struct BookingOptions {
  std::string container, device_key, source = "hook", instance;
  std::vector<std::string> annotations;  // KEY=VALUE
  std::int64_t pid = 0;
};

// --container (required), --device-key, --annotation (required, repeatable), --pid, --source,
// --instance.
void add_booking_options(CLI::App& cmd, BookingOptions& o);
// The request (from the annotations, with the config's aliases) and the source, checked; `example`
// is the annotation the "no request" error suggests.
Result<ReserveArgs> reserve_args_from(const BookingOptions& o, const Config& cfg, const std::string& example);
// Only the request, for subcommands that book nothing (`gpufrac mig plan`).
Result<Request> request_from(const std::vector<std::string>& pairs, bool aliases, const std::string& example);
// {"device_uuid", "gpu_index", "gpu_uuid", "mig", "bytes", "exclusive", "reason", "compute_ppm" (0: no
// compute share), "compute_mode", "priority", "existing"}.
nlohmann::json grant_json(const Grant& g, bool existing);

}  // namespace gpufrac::cli
