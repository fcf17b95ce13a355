#include "cli/booking_args.hpp"

#include "core/text.hpp"

namespace gpufrac::cli {

void add_booking_options(CLI::App& cmd, BookingOptions& o) {
  cmd.add_option("--container", o.container, "Container id")->required();
  cmd.add_option("--device-key", o.device_key, "Device key (several devices of one container)");
  cmd.add_option("--annotation", o.annotations, "Request annotation KEY=VALUE (repeatable)")->required();
  cmd.add_option("--pid", o.pid, "Host pid of the container (0 = pending)");
  cmd.add_option("--source", o.source, "hook, wrapper or cdi");
  cmd.add_option("--instance", o.instance,
                 "Container instance (p<pid>-<start>, w<hex>; two containers may share an id)");
}

Result<Request> request_from(const std::vector<std::string>& pairs, bool aliases, const std::string& example) {
  Annotations a;
  for (const auto& kv : pairs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) return user_error("--annotation " + text::quote(kv) + ": use KEY=VALUE");
    a[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto r = parse_request(a, aliases);
  if (!r) return std::unexpected(r.error());
  if (!*r) return user_error("no gpufrac request in the annotations; use e.g. --annotation " + example);
  return **r;
}

Result<ReserveArgs> reserve_args_from(const BookingOptions& o, const Config& cfg, const std::string& example) {
  auto request = request_from(o.annotations, cfg.aliases, example);
  if (!request) return std::unexpected(request.error());
  auto source = booking_source_from(o.source);
  if (!source) return user_error("--source " + text::quote(o.source) + ": use hook, wrapper or cdi");
  if (auto r = validate_optional_instance(o.instance); !r) return std::unexpected(r.error().wrap("--instance"));
  return ReserveArgs{o.container, o.device_key, *request, *source, o.pid, std::nullopt, o.instance};
}

nlohmann::json grant_json(const Grant& g, bool existing) {
  nlohmann::json mig = nullptr;
  if (g.mig) mig = {{"gi", g.mig->gi}, {"ci", g.mig->ci}, {"profile", g.mig->profile}};
  return {{"device_uuid", g.device_uuid},
          {"gpu_index", g.gpu_index},
          {"gpu_uuid", g.gpu_uuid},
          {"mig", mig},
          {"bytes", g.bytes},
          {"exclusive", g.exclusive},
          {"reason", g.reason},
          {"compute_ppm", g.compute_ppm},
          {"compute_mode", to_string(g.compute_mode)},
          {"priority", to_string(g.priority)},
          {"existing", existing}};
}

}  // namespace gpufrac::cli
