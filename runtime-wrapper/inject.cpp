#include "runtime-wrapper/inject.hpp"
#include "exec/inventory_exec.hpp"

#include <sys/random.h>
#include <sys/stat.h>

#include <cerrno>

#include "bundle/nvidia_edits.hpp"
#include "bundle/oci.hpp"
#include "bundle/rootfs_path.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/log.hpp"
#include "core/plan/plan.hpp"
#include "core/request/compute_share.hpp"
#include "core/request/unknown_keys.hpp"
#include "core/spec/spec_read.hpp"
#include "core/spec/strict_json.hpp"
#include "core/text.hpp"
#include "exec/driver_limit_exec.hpp"
#include "exec/mig_exec.hpp"
#include "exec/mps_exec.hpp"
#include "nvml/device_nodes.hpp"
#include "nvml/inventory_cache.hpp"
#include "runtime-wrapper/driver_limit_edits.hpp"
#include "runtime-wrapper/requests.hpp"
#include "runtime-wrapper/spec_edit.hpp"
#include "runtime-wrapper/warnings.hpp"
#include "state/container_mount.hpp"
#include "state/container_state.hpp"

namespace gpufrac::wrapper {

namespace {

std::string absolute(const std::string& path, const std::string& base) {
  if (path.empty() || path == ".") return base;
  return path.front() == '/' ? path : base + "/" + path;
}

// The image's own /etc/ld.so.preload as the container will see it: the source of a bind the spec
// puts there (read as a regular file, bounded), else the rootfs's, read without following a symlink.
std::string image_preload(const bundle::BundleSpec& bundle) {
  const bool bound = bundle.preload_source.starts_with("/");
  auto text = bound ? fs::read_file(bundle.preload_source, 64u << 10) : bundle::read_image_preload(bundle.rootfs);
  if (!text) log::warn("ignoring the image's /etc/ld.so.preload: " + text.error().message);
  return text ? *text : "";
}

// The bookings to make: the annotation (or environment) request, parsed once at create, then the
// CDI devices (these need the inventory).
Result<std::vector<WantedDevice>> wanted_devices(const bundle::BundleSpec& bundle, std::vector<WantedDevice> wanted,
                                                 const Inventory& inventory) {
  auto cdi = cdi_requests(gpufrac_cdi_devices(bundle.annotations), inventory);
  if (!cdi) return cdi;
  wanted.insert(wanted.end(), cdi->begin(), cdi->end());
  return wanted;
}

// SM sharing (`gpufrac mps provision`): books the device pending and makes sure its GPU's MPS
// daemon runs; for a time share an idle MPS daemon kept out, it stops that daemon first.
Result<> provision_mps(const Injection& inj, const WantedDevice& w, const Config& cfg) {
  ProvisionCall call{inj.container_id,          w.device_key, 0, BookingSource::wrapper,
                     annotations_of(w.request), inj.instance};
  auto grant = run_mps_provision(cfg, call);
  if (!grant) return std::unexpected(grant.error());
  return {};
}

// Books one wanted device pending for this create's instance, through a provisioner for an SM share
// and when dynamic MIG applies (it gets the request's keys, an environment request's under their
// annotation names).
Result<> book_one(const Injection& inj, const WantedDevice& w, const Annotations& keys, Inventory& inventory,
                  const Config& cfg) {
  if (is_sm_request(w.request)) return provision_mps(inj, w, cfg);
  ReserveArgs args{inj.container_id, w.device_key, w.request, BookingSource::wrapper, 0, std::nullopt, inj.instance};
  auto booking = Ledger(LedgerOptions::from(cfg)).reserve(args, inventory, cfg.allocation);
  if (!booking && mps_reclaim_may_help(booking.error(), w.request, cfg)) return provision_mps(inj, w, cfg);
  if (!booking && w.device_key.empty() && !w.request.multi_gpu() &&
      provisioning_may_help(booking.error(), w.request, inventory, cfg)) {
    // Dynamic MIG: the provisioner books it pending; the new instance's nodes are in the
    // inventory read again.
    ProvisionCall call{inj.container_id, "", 0, BookingSource::wrapper, request_annotations(keys, cfg.aliases),
                       inj.instance};
    auto fresh = provision_and_reread(cfg, call);
    if (!fresh) return std::unexpected(fresh.error());
    inventory = std::move(*fresh);
    return {};
  }
  if (!booking) return std::unexpected(booking.error());
  for (const auto& r : booking->reclaimed) log::info("reclaimed " + r.entry.container_id + ": " + r.why);
  for (const auto& g : booking->grants)
    log::info(text::cat("booked ", g.device_uuid, " (", booked_text(g.bytes, g.compute_ppm), ") pending for ",
                        w.request.describe(), ": ", g.reason));
  return {};
}

// Books every wanted device pending; the caller undoes the instance's bookings on failure (a failed
// provisioner may have booked before failing).
Result<std::vector<LedgerEntry>> book(const Injection& inj, const std::vector<WantedDevice>& wanted,
                                      const bundle::BundleSpec& bundle, Inventory& inventory, const Config& cfg) {
  auto keys = request_keys(bundle.annotations, bundle.env, cfg.aliases);
  if (!keys) return std::unexpected(keys.error());
  for (const auto& w : wanted)
    if (auto r = book_one(inj, w, keys->keys, inventory, cfg); !r) return std::unexpected(r.error());
  return Ledger(LedgerOptions::from(cfg)).bookings_of(inj.container_id, inj.instance);
}

// The Edits for the bookings plus the wrapper's two hooks, both naming this instance: the first
// mounts gpufrac's directory (core/plan/plan.hpp plan_gpufrac_dir: never in config.json) and rebuilds
// the loader cache when gpufrac brings the driver. A spec that already holds a GPU gpufrac did not
// grant is refused.
Result<Edits> wrapper_edits(const std::vector<LedgerEntry>& bookings, const Inventory& inventory, const Config& cfg,
                            const Injection& inj, const bundle::BundleSpec& bundle) {
  std::vector<Grant> grants;
  for (const auto& b : bookings) grants.push_back(grant_of(b));
  const bundle::NvidiaEdits nvidia = bundle::find_nvidia_edits(bundle);
  const bool with_driver = bundle::injects_driver(cfg, inventory, nvidia);
  auto edits = plan_spec_edits(grants, inventory, cfg, container_key(inj.container_id, inj.instance), with_driver);
  if (!edits) return edits;
  if (auto r = bundle::check_spec_gpu_nodes(bundle, edits->device_nodes); !r) return std::unexpected(r.error());
  for (const auto& n : edits->device_nodes)
    if (auto r = check_host_device_node(n.host_path.empty() ? n.path : n.host_path, n.path); !r)
      return std::unexpected(r.error());
  std::vector<std::string> attach = {"--attach", "--instance", inj.instance};
  if (with_driver && !nvidia.ldcache_hook) attach.insert(attach.end(), {"--ld-cache", ld_cache_arg(inventory.driver)});
  if (auto r = add_driver_limit_edits(*edits, attach, bookings, inventory, cfg, bundle.env); !r)
    return std::unexpected(r.error());
  edits->hooks.push_back(plan_hook(cfg, "createRuntime", "createRuntime", attach));
  edits->hooks.push_back(plan_hook(cfg, "poststop", "poststop", {"--instance", inj.instance}));
  return edits;
}

Result<std::string> dump(const Spec& spec) {
  try {
    return spec.dump();
  } catch (const std::exception& e) {
    return internal_error(std::string("cannot write config.json: ") + e.what());
  }
}

// This create's instance: "w" and 16 random hex digits (two containers may share the id).
Result<std::string> new_instance() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    return sys_error("cannot draw the container's instance id");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "w";
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

// The create's config.json read once: checked strictly, parsed once (the ordered DOM the edits
// go into; the bundle's fields are read from it), its request parsed once.
struct Parsed {
  Spec spec;
  bundle::BundleSpec bundle;
  std::string original;                 // config.json as read
  std::vector<WantedDevice> requested;  // the annotation (or environment) request: none or one
};

// Requests gpufrac cannot honour but recognises (runtime-wrapper/warnings.hpp): a warning each, in
// the log and on stderr; the container starts as asked. The log is set up only when there is one.
void emit_warnings(const std::vector<std::string>& warnings, const Config& cfg, const std::string& container_id) {
  if (warnings.empty()) return;
  log::init(cfg.log, "gpufrac-runtime");
  log::set_context(container_id);
  for (const auto& w : warnings) warn(w);
}

// Files, Edits, the new config.json, after the bookings were made.
Result<> prepare(Parsed& p, const Injection& inj, const std::vector<LedgerEntry>& bookings, const Inventory& inventory,
                 const Config& cfg) {
  const std::string key = container_key(inj.container_id, inj.instance);
  if (auto m = mount_container_dir(cfg, key); !m)  // the bound on what the container writes there
    log::warn("the container's state directory is not size-limited: " + m.error().message);
  auto files = write_container_files(cfg, key, bookings, image_preload(p.bundle));
  if (!files) return std::unexpected(files.error());
  auto edits = wrapper_edits(bookings, inventory, cfg, inj, p.bundle);
  if (!edits) return std::unexpected(edits.error());
  if (auto r = apply_edits(p.spec, *edits); !r) return r;
  auto text = dump(p.spec);
  if (!text) return std::unexpected(text.error());
  return fs::write_file_atomic(inj.config_path, *text, inj.mode);
}

// Books and prepares; on failure after a booking everything is undone.
Result<Injection> book_and_prepare(Parsed& p, Injection inj, const Config& cfg, metrics::Refusal& why) {
  auto inventory = inventory_for_allocation(cfg, refresh_by_cli);
  if (!inventory) return std::unexpected(inventory.error());
  auto wanted = wanted_devices(p.bundle, std::move(p.requested), *inventory);
  if (!wanted) {
    why = metrics::Refusal::malformed;  // a CDI device name this node does not offer
    return std::unexpected(wanted.error());
  }
  why = metrics::Refusal::capacity;
  if (wanted->empty()) return Injection{};  // only alias keys, and aliases are off
  auto done = [&]() -> Result<> {
    auto bookings = book(inj, *wanted, p.bundle, *inventory, cfg);
    if (!bookings) return std::unexpected(bookings.error());
    return prepare(p, inj, *bookings, *inventory, cfg);
  }();
  if (!done) {
    undo(inj, cfg);
    return std::unexpected(done.error());
  }
  inj.changed = true;
  log::info(text::cat("prepared ", inj.config_path));
  return inj;
}

// nullopt: leave the spec alone (no request; already prepared). A spec that may carry a request
// (`named`: the fast path's text test of the whole file, core/spec/spec_read.hpp) but is not JSON every
// runtime reads the same way (core/spec/strict_json.hpp) is refused: passing it through would start the
// container with its request and without its share.
Result<std::optional<Parsed>> parse_if_wanted(const std::string& text, bool named, const std::string& bundle,
                                              const Config& cfg, const std::string& container_id) {
  if (!named) return std::optional<Parsed>{};
  if (auto r = check_strict_json(text, bundle + "/config.json", {.max_bytes = bundle::kMaxConfigBytes}); !r)
    return std::unexpected(r.error());
  Spec spec = Spec::parse(text);  // checked: it parses; ordered, so config.json keeps its key order
  if (!spec.is_object() || already_injected(spec, cfg.hook_path)) return std::optional<Parsed>{};
  auto parsed = bundle::bundle_spec_from(spec, bundle);
  if (!parsed) return std::unexpected(parsed.error());
  auto unknown = check_request_names(parsed->annotations, parsed->env, cfg.requests.unknown);
  if (!unknown) return std::unexpected(unknown.error());
  emit_warnings(*unknown, cfg, container_id);
  if (!wants_gpufrac(parsed->annotations, cfg.aliases, parsed->env)) return std::optional<Parsed>{};
  return std::optional<Parsed>(Parsed{std::move(spec), std::move(*parsed), "", {}});
}

// The create's config.json, when gpufrac has something to do with it; nullopt when it is the
// runtime's alone (no file, a text that cannot name gpufrac, no request, already prepared). A spec
// that names gpufrac but cannot be read whole, or whose text cannot be examined, is refused
// (core/spec/spec_read.hpp), never passed through.
Result<std::optional<Parsed>> read_if_wanted(const std::string& path, const std::string& bundle, const Config& cfg,
                                             const std::string& container_id) {
  auto spec = read_spec(path, {.max_bytes = bundle::kMaxConfigBytes});
  if (!spec) return std::unexpected(spec.error());
  if (!spec->text) return std::optional<Parsed>{};
  emit_warnings(docker_label_warnings_for(*spec->text, container_id), cfg, container_id);
  auto wanted = parse_if_wanted(*spec->text, spec->named, bundle, cfg, container_id);
  if (wanted && *wanted) (*wanted)->original = std::move(*spec->text);
  return wanted;
}

}  // namespace

std::string spec_path(const RuntimeArgs& args, const std::string& cwd) {
  const std::string bundle = absolute(args.bundle, cwd);
  return absolute(args.config_file.empty() ? "config.json" : args.config_file, bundle);
}

Result<Injection> inject(const RuntimeArgs& args, const std::string& cwd, const Config& cfg, InjectOutcome* outcome) {
  InjectOutcome ignored;
  InjectOutcome& out = outcome ? *outcome : ignored;
  Injection inj{false, args.container_id, spec_path(args, cwd), "", 0644, ""};
  auto wanted = read_if_wanted(inj.config_path, absolute(args.bundle, cwd), cfg, args.container_id);
  if (wanted && !*wanted) return Injection{};
  log::init(cfg.log, "gpufrac-runtime");
  log::set_context(args.container_id);
  out.asked = true;
  out.why = metrics::Refusal::malformed;
  if (!wanted && wanted.error().kind == ErrorKind::internal) out.why = metrics::Refusal::other;
  if (!wanted) return std::unexpected(wanted.error());
  auto& parsed = *wanted;
  if (auto r = validate_container_id(args.container_id); !r) return std::unexpected(r.error());
  auto requested = annotation_request(parsed->bundle.annotations, cfg.aliases, parsed->bundle.env);
  if (!requested) return std::unexpected(requested.error());
  parsed->requested = std::move(*requested);
  out.why = metrics::Refusal::host_pid;
  if (auto r = bundle::check_host_pid(parsed->bundle, cfg.require_host_pid, cfg.proc_root); !r)
    return std::unexpected(r.error());
  struct stat st {};
  if (::stat(inj.config_path.c_str(), &st) == 0) inj.mode = st.st_mode & 07777;
  inj.original = std::move(parsed->original);
  auto instance = new_instance();
  if (!instance) return std::unexpected(instance.error());
  inj.instance = std::move(*instance);
  auto done = book_and_prepare(*parsed, std::move(inj), cfg, out.why);
  if (!done && done.error().kind == ErrorKind::internal) out.why = metrics::Refusal::other;
  return done;
}

void undo(const Injection& inj, const Config& cfg) {
  if (inj.changed)
    if (auto r = fs::write_file_atomic(inj.config_path, inj.original, inj.mode); !r)
      log::warn("undo: " + r.error().message);
  if (inj.instance.empty()) return;  // nothing was booked by this call
  auto released = Ledger(LedgerOptions::from(cfg)).release(inj.container_id, inj.instance);
  if (!released) log::warn("undo: " + released.error().message);
  if (released) clear_released_limits(cfg, *released);
  if (auto r = remove_container_files(cfg, container_key(inj.container_id, inj.instance)); !r)
    log::warn("undo: " + r.error().message);
}

}  // namespace gpufrac::wrapper
