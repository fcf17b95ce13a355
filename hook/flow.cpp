#include "hook/flow.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "bundle/nvidia_edits.hpp"
#include "bundle/oci.hpp"
#include "bundle/rootfs_path.hpp"
#include "core/build_info.hpp"
#include "core/config/config.hpp"
#include "core/ledger/ledger.hpp"
#include "core/log.hpp"
#include "core/plan/plan.hpp"
#include "core/request/env_request.hpp"
#include "core/request/request.hpp"
#include "core/request/unknown_keys.hpp"
#include "core/text.hpp"
#include "exec/driver_limit_exec.hpp"
#include "exec/reclaim_exec.hpp"
#include "hook/booking.hpp"
#include "hook/cgroup_devices.hpp"
#include "hook/cgroup_join.hpp"
#include "hook/driver_limit_step.hpp"
#include "hook/driver_step.hpp"
#include "hook/ns_apply.hpp"
#include "hook/privileges.hpp"
#include "hook/refusal.hpp"
#include "metrics/counter_file.hpp"
#include "state/claim_members.hpp"
#include "state/container_mount.hpp"
#include "state/container_state.hpp"

namespace gpufrac::hook {

namespace {

// The error on stderr, and in the log unless the log is stderr itself (the same line twice).
int report(const Error& e) {
  std::fprintf(stderr, "gpufrac-hook: %s\n", e.message.c_str());
  if (!log::on_stderr()) log::error(e.message);
  return e.exit_code();
}

// The image's own /etc/ld.so.preload as the container sees it: through /proc/<pid>/root, so in the
// container's mount namespace (a bind of the spec's at /etc/ld.so.preload counts), by the rootfs
// walk (never following a symlink).
std::string image_preload(const Invocation& inv) {
  auto text = bundle::read_image_preload(text::cat(inv.cfg.proc_root, "/", *inv.state.pid, "/root", inv.spec.rootfs));
  if (!text) log::warn("ignoring the image's /etc/ld.so.preload: " + text.error().message);
  return text ? *text : "";
}

// The container's loader cache once the driver's files are mounted (hook/driver_step.hpp).
Result<> update_ld_cache(const Invocation& inv, const std::vector<std::string>& dirs) {
  auto in_place = refresh_ld_cache(inv.cfg, inv.state, inv.spec, inv.key(), dirs);
  if (!in_place) return std::unexpected(in_place.error());
  log::info(*in_place ? "updated the container's /etc/ld.so.cache for the driver's libraries"
                      : "bound a private /etc/ld.so.cache for the driver's libraries (read-only root)");
  return {};
}

// The container's directory on the host, a tmpfs of its own (state/container_mount.hpp): what the
// container writes into its usage region stays within it. Where it cannot be mounted (no
// CAP_SYS_ADMIN), the files are written all the same, with a warning.
Result<> bound_state(const Invocation& inv) {
  if (auto r = set_effective(kApplyCapabilities); !r) return r;
  if (auto m = mount_container_dir(inv.cfg, inv.key()); !m)
    log::warn("the container's state directory is not size-limited: " + m.error().message);
  return {};
}

Result<> apply(const Invocation& inv, const Edits& edits) {
  if (auto r = set_effective(kApplyCapabilities); !r) return r;
  auto prepared = prepare_mounts(edits);
  if (!prepared) return std::unexpected(prepared.error());
  NamespaceTarget target{text::cat(inv.cfg.proc_root, "/", *inv.state.pid, "/ns/mnt"), inv.spec.rootfs};
  if (auto r = attach_in_namespace(target, *prepared); !r) return r;
  if (edits.device_nodes.empty()) return {};
  return allow_devices(inv.cfg.proc_root, inv.cfg.cgroup_root, *inv.state.pid, inv.spec.device_rules,
                       edits.device_nodes);
}

// gpufrac's directory (core/plan/plan.hpp plan_gpufrac_dir) for a container whose spec a front-end wrote
// (the wrapper's --attach, a DRA claim's --claim): no spec carries it; the files are the front-end's.
Result<> mount_gpufrac_dir(const Invocation& inv, const std::string& container_id, const std::string& instance) {
  if (!inv.state.pid)
    return user_error("the OCI state on stdin has no pid; gpufrac-hook must run at prestart or createRuntime");
  auto edits = gpufrac_dir_edits(inv.cfg, container_id, instance);
  if (!edits) return std::unexpected(edits.error());
  return apply(inv, *edits);
}

// A later CDI device of a container (its first device's hook mounted gpufrac's directory; the limit
// file was rewritten in place): a device with a compute share needs its arbiter, so the directory is
// mounted again over the first, with every share of the container (the mount rule takes a tmpfs of
// gpufrac's at /run/gpufrac as a target: hook/ns_apply.cpp accepted_mount_root).
Result<> remount_for_added_device(const Invocation& inv, const std::vector<LedgerEntry>& bookings) {
  const bool arbitrated = std::any_of(bookings.begin(), bookings.end(), [&](const LedgerEntry& b) {
    return b.device_key == inv.args.cdi_device && b.compute_ppm != 0;
  });
  if (!arbitrated) return {};
  Edits edits;
  edits.mounts = plan_gpufrac_dir(inv.cfg, container_files(inv.cfg, inv.key()), grants_of(bookings));
  return apply(inv, edits);
}

// gpufrac-runtime's createRuntime hook (--attach): the wrapper booked, wrote the container's files
// and edited the spec; what is left is, in the order of a booking hook, the driver's limits (told by
// --driver-limit), gpufrac's directory, and the pid. A failure is the wrapper's to undo (it releases).
Result<> attach_step(const Invocation& inv) {
  auto pending = Ledger(LedgerOptions::from(inv.cfg)).bookings_of(inv.state.id, inv.instance);
  if (!pending) return std::unexpected(pending.error());
  if (auto r = check_cgroup_join(inv.cfg, *inv.state.pid, inv.key(), *pending); !r) return r;
  if (inv.args.driver_limit)
    if (auto r = set_told_driver_limits(inv); !r) return r;
  if (auto r = mount_gpufrac_dir(inv, inv.state.id, inv.instance); !r) return r;
  auto bookings = attach_pid(inv);
  if (!bookings) return std::unexpected(bookings.error());
  if (wants_reclaimer(*bookings)) start_reclaimer(inv.cfg);
  return {};
}

// A container of a claim with a burst limit: its cgroups, so that the reclaimer tells the claim's
// processes apart (state/claim_members.hpp). A failure costs the claim its borrowing, not its start.
Result<> note_claim_member(const Invocation& inv) {
  auto bookings = Ledger(LedgerOptions::from(inv.cfg)).bookings_of_claim(inv.args.claim);
  if (!bookings || !wants_reclaimer(*bookings)) return {};
  if (auto r = add_claim_member(inv.cfg, container_key(inv.args.claim, kClaimInstance), *inv.state.pid); !r)
    log::warn("claim member: " + r.error().message + "; the claim borrows nothing");
  return {};
}

// A DRA claim's spec: gpufrac-dra booked before any container; the policy, the driver's limits on
// the pod's cgroup (told by --driver-limit) and gpufrac's directory with the claim's files are what
// is left. A failure refuses the container; the claim stays prepared until it is unprepared.
Result<> claim_step(const Invocation& inv) {
  if (auto r = bundle::check_host_pid(inv.spec, inv.cfg.require_host_pid, inv.cfg.proc_root); !r) return r;
  if (inv.args.driver_limit)
    if (auto r = set_told_driver_limits(inv); !r) return r;
  auto bookings = Ledger(LedgerOptions::from(inv.cfg)).bookings_of_claim(inv.args.claim);
  if (!bookings) return std::unexpected(bookings.error());
  const std::string key = container_key(inv.args.claim, kClaimInstance);
  if (auto r = check_cgroup_join(inv.cfg, *inv.state.pid, key, *bookings); !r) return r;
  if (auto r = mount_gpufrac_dir(inv, inv.args.claim, kClaimInstance); !r) return r;
  return note_claim_member(inv);
}

void rollback(const Invocation& inv) {
  Ledger ledger(LedgerOptions::from(inv.cfg));
  auto released = ledger.release(inv.state.id, inv.instance);
  if (!released) log::warn("rollback: " + released.error().message);
  if (released) clear_released_limits(inv.cfg, *released);
  if (auto r = remove_container_files(inv.cfg, inv.key()); !r) log::warn("rollback: " + r.error().message);
}

Result<> book_and_apply(Invocation& inv) {
  if (auto r = bundle::check_host_pid(inv.spec, inv.cfg.require_host_pid, inv.cfg.proc_root); !r) return r;
  if (!inv.state.pid)
    return user_error("the OCI state on stdin has no pid; gpufrac-hook must run at prestart or createRuntime");
  if (inv.args.attach) return attach_step(inv);  // the runtime wrapper booked and edited the spec
  auto bookings = book(inv);
  if (!bookings) return std::unexpected(bookings.error());
  if (bookings->empty()) return {};  // only alias keys, and aliases are off
  // A container with several CDI devices runs one hook per device: the first mounts the files, the
  // later ones only update the (already mounted) limit file in place.
  const bool mounted = !inv.args.cdi_device.empty() && bookings->size() > 1;
  auto done = [&]() -> Result<> {
    if (auto r = check_cgroup_join(inv.cfg, *inv.state.pid, inv.key(), *bookings); !r) return r;
    if (auto r = set_driver_limits(inv, *bookings); !r) return r;
    if (!mounted)
      if (auto r = bound_state(inv); !r) return r;
    auto files = write_container_files(inv.cfg, inv.key(), *bookings, image_preload(inv),
                                       mounted ? FileUpdate::in_place : FileUpdate::replace);
    if (!files) return std::unexpected(files.error());
    if (mounted) return remount_for_added_device(inv, *bookings);
    auto edits = edits_for(inv, *bookings);
    if (!edits) return std::unexpected(edits.error());
    if (auto r = apply(inv, *edits); !r) return r;
    if (!inv.with_driver) return {};
    return update_ld_cache(inv, inv.inventory.driver.library_dirs);
  }();
  if (!done) rollback(inv);
  if (done && wants_reclaimer(*bookings)) start_reclaimer(inv.cfg);
  return done;
}

// The CDI spec's and the wrapper's `--ld-cache DIRS`: the runtime mounted the driver's files; the
// loader cache follows unless NVIDIA's own hook rebuilds it (its edits are in the spec).
Result<> ld_cache_step(const Invocation& inv) {
  auto dirs = parse_ld_cache_dirs(inv.args.ld_cache);
  if (!dirs) return std::unexpected(dirs.error());
  if (bundle::find_nvidia_edits(inv.spec).ldcache_hook) {
    log::info("NVIDIA's hook rebuilds the loader cache; gpufrac leaves it");
    return {};
  }
  return update_ld_cache(inv, *dirs);
}

Result<> run_steps(Invocation& inv) {
  if (!inv.args.claim.empty())
    if (auto r = claim_step(inv); !r) return std::unexpected(r.error().wrap("claim " + inv.args.claim));
  // A CDI spec's `--ld-cache` hook never books: the annotation request has its own hook.
  const bool books = !inv.args.cdi_device.empty() || inv.args.attach ||
                     (inv.args.ld_cache.empty() && inv.args.claim.empty() &&
                      has_container_request(inv.spec.annotations, inv.spec.env, true));
  if (books)
    if (auto r = book_and_apply(inv); !r) return r;
  return inv.args.ld_cache.empty() ? Result<>{} : ld_cache_step(inv);
}

// Adds this invocation to the counter file for `gpufrac metrics`; a failure costs a log line only.
void count(const Config& cfg, Stage stage, std::uint64_t started_ns, const Invocation* refused, const Error* e) {
  metrics::Observation o;
  o.timer = stage == Stage::prestart         ? metrics::Timer::hook_prestart
            : stage == Stage::create_runtime ? metrics::Timer::hook_create_runtime
                                             : metrics::Timer::hook_poststop;
  o.duration_ns = metrics::monotonic_ns() - started_ns;
  o.refused = refused != nullptr;
  if (refused) o.reason = refusal_of(*refused, *e);
  if (auto r = metrics::record(cfg.state_dir, o); !r) log::warn("metrics: " + r.error().message);
}

void warn(const std::string& container_id, const std::vector<std::string>& lines) {
  for (const auto& w : lines) {
    if (!log::on_stderr()) log::warn(w);
    std::fprintf(stderr, "gpufrac-hook: warning: container %s: %s\n", container_id.c_str(), w.c_str());
  }
}

// A container without a request whose environment holds a name that looks like one (a GPUFRAC_*
// variable gpufrac does not know, core/request/unknown_keys.hpp): refused, or under
// requests.unknown: warn one warning each, in the log and on stderr, and it starts. Only such a
// container loads the config.
Result<> check_unrequested(const HookArgs& args, const bundle::OciState& state, const bundle::BundleSpec& spec) {
  if (unknown_request_names(spec.annotations, spec.env).empty()) return {};
  auto cfg = select_config(args.config_path);
  if (!cfg) return std::unexpected(cfg.error());
  log::init(cfg->log, "gpufrac-hook");
  log::set_context(state.id);
  Annotations annotations = spec.annotations;
  auto lines = check_request_names(annotations, spec.env, cfg->requests.unknown);
  if (!lines) return std::unexpected(lines.error());
  warn(state.id, *lines);
  return {};
}

// The names of a container that asks for something: an unknown one is refused, or under
// requests.unknown: warn dropped with a warning. The wrapper's --attach and a CDI spec's --ld-cache
// hook leave this to the front-end that books (the wrapper, the device's own hook).
Result<> check_names(Invocation& inv) {
  if (inv.args.attach || !inv.args.ld_cache.empty()) return {};
  auto lines = check_request_names(inv.spec.annotations, inv.spec.env, inv.cfg.requests.unknown);
  if (!lines) return std::unexpected(lines.error());
  warn(inv.state.id, *lines);
  return {};
}

Result<> create(const HookArgs& args, const bundle::OciState& state, std::uint64_t started_ns) {
  // The fast path: this hook runs for every container on the node. No DOM, no config, no NVML, no
  // ledger: a text that cannot name gpufrac ends here; else one strict pass over config.json gives
  // the annotations and the environment.
  const bool named = !args.cdi_device.empty() || args.attach || !args.ld_cache.empty() || !args.claim.empty();
  auto config = bundle::load_bundle_config(state.bundle, named ? bundle::Scan::always : bundle::Scan::when_named);
  if (!config) return std::unexpected(config.error());
  const bundle::BundleSpec& fields = config->request_fields;
  if (!named && !has_container_request(fields.annotations, fields.env, true))
    return check_unrequested(args, state, fields);
  // gpufrac-runtime already booked and edited this spec; its own `--attach` hook records the pid.
  if (!named && fields.annotations.contains(annotation::kInjected)) return {};
  auto spec = config->full();
  if (!spec) return std::unexpected(spec.error());
  auto cfg = select_config(args.config_path);
  if (!cfg) return std::unexpected(cfg.error());
  log::init(cfg->log, "gpufrac-hook");
  log::set_context(state.id);
  Invocation inv{args, state, std::move(*spec), std::move(*cfg)};
  auto r = check_names(inv);
  if (r) r = identify(inv);
  if (r) r = run_steps(inv);
  if (r) log::info("applied at " + std::string(args.stage == Stage::prestart ? "prestart" : "createRuntime"));
  count(inv.cfg, args.stage, started_ns, r ? nullptr : &inv, r ? nullptr : &r.error());
  return r;
}

int poststop(const HookArgs& args, const bundle::OciState& state, std::uint64_t started_ns) {
  auto cfg = select_config(args.config_path);
  if (!cfg) {
    std::fprintf(stderr, "gpufrac-hook: poststop: %s\n", cfg.error().message.c_str());
    return 0;
  }
  log::init(cfg->log, "gpufrac-hook");
  log::set_context(state.id);
  // Only this container's bookings: another container may have the same id (another runtime root).
  Ledger ledger(LedgerOptions::from(*cfg));
  auto released = ledger.release_stopped(state.id, args.instance, state.pid.value_or(0));
  if (!released) log::warn("poststop: " + released.error().message);
  std::set<std::string> keys;
  if (!args.instance.empty()) keys.insert(container_key(state.id, args.instance));
  for (const auto& e : released ? *released : std::vector<LedgerEntry>{}) keys.insert(container_key(e));
  // Unmounting a container's directory (state/container_mount.hpp) needs CAP_SYS_ADMIN.
  if (auto r = set_effective(kApplyCapabilities); !r) log::warn("poststop: " + r.error().message);
  for (const auto& key : keys)
    if (auto r = remove_container_files(*cfg, key); !r) log::warn("poststop: " + r.error().message);
  if (released) clear_released_limits(*cfg, *released);
  if (released && !released->empty()) log::info(text::cat("released ", released->size(), " booking(s)"));
  count(*cfg, args.stage, started_ns, nullptr, nullptr);
  return 0;  // poststop never fails the lifecycle
}

}  // namespace

std::string hook_help() {
  return std::string(kHookUsage) + "\n" +
         "The OCI hook of gpufrac (gpufrac-hook(8)). A runtime runs it with the container's OCI state on stdin:\n"
         "at prestart or createRuntime it books the GPU share the container asks for (annotations gpufrac.io/*)\n"
         "and mounts it into the container; at poststop it releases the share.\n"
         "  --config FILE      config file (default: $GPUFRAC_CONFIG, else " +
         build::kConfigPath +
         ")\n"
         "  --cdi-device NAME  book this gpufrac CDI device (the CDI spec's hooks pass it)\n"
         "  --attach           a container gpufrac-runtime booked: mount gpufrac's directory, record the pid\n"
         "  --ld-cache DIRS    rebuild the container's loader cache for the driver's libraries in DIRS\n"
         "                     (':'-separated; the CDI spec and gpufrac-runtime pass it)\n"
         "  --instance ID      the container instance gpufrac-runtime booked for (else its pid and start time)\n"
         "  --claim UID        a container of a Kubernetes claim gpufrac-dra prepared: check the host-PID\n"
         "                     policy, mount gpufrac's directory (the claim's CDI spec passes it)\n"
         "  --driver-limit     with --attach or --claim: also set the driver's per-cgroup memory limits of the\n"
         "                     bookings (gpufrac-runtime and gpufrac-dra pass it where the driver holds them)\n"
         "  --help             print this help; --version prints the version\n";
}

Result<HookArgs> parse_hook_args(int argc, const char* const* argv) {
  constexpr const char* usage = kHookUsage;
  if (argc < 2) return user_error(usage);
  HookArgs a;
  std::string_view stage = argv[1];
  if (stage == "prestart")
    a.stage = Stage::prestart;
  else if (stage == "createRuntime")
    a.stage = Stage::create_runtime;
  else if (stage == "poststop")
    a.stage = Stage::poststop;
  else
    return user_error(text::quote(stage) + " is not a stage; " + usage);
  for (int i = 2; i < argc; ++i) {
    std::string_view opt = argv[i];
    bool has_value = i + 1 < argc;
    if (opt == "--config" && has_value)
      a.config_path = argv[++i];
    else if (opt == "--cdi-device" && has_value)
      a.cdi_device = argv[++i];
    else if (opt == "--attach")
      a.attach = true;
    else if (opt == "--ld-cache" && has_value)
      a.ld_cache = argv[++i];
    else if (opt == "--instance" && has_value)
      a.instance = argv[++i];
    else if (opt == "--claim" && has_value)
      a.claim = argv[++i];
    else if (opt == "--driver-limit")
      a.driver_limit = true;
    else
      return user_error(text::quote(opt) + " is not an option; " + usage);
  }
  if (auto r = validate_optional_instance(a.instance); !r) return std::unexpected(r.error().wrap("--instance"));
  if (!a.claim.empty())
    if (auto r = validate_kube_uid(a.claim, "claim"); !r) return std::unexpected(r.error().wrap("--claim"));
  return a;
}

int run_hook(const HookArgs& args, std::string_view state_json) {
  const std::uint64_t started_ns = metrics::monotonic_ns();
  if (auto r = restrict_bounding_set(); !r) return report(r.error());
  if (auto r = set_effective(kBookingCapabilities); !r) return report(r.error());
  auto state = bundle::parse_oci_state(state_json);
  if (!state) return args.stage == Stage::poststop ? 0 : report(state.error());
  if (args.stage == Stage::poststop) return poststop(args, *state, started_ns);
  auto r = create(args, *state, started_ns);
  return r ? 0 : report(r.error());
}

}  // namespace gpufrac::hook
