#include "k8s/dra_driver.hpp"

#include <sys/stat.h>

#include <set>

#include "cdi/spec_write.hpp"
#include "core/fault.hpp"
#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "exec/reclaim_exec.hpp"
#include "k8s/claim_spec.hpp"
#include "nvml/discover.hpp"
#include "nvml/driver_limit_apply.hpp"
#include "nvml/inventory_cache.hpp"
#include "nvml/mig_provision.hpp"
#include "nvml/mps_provision.hpp"

namespace gpufrac::dra {

namespace {

// Another instance's prepare is bounded by its API timeout (10 s) and the ledger's: well inside
// the kubelet's 45 s.
constexpr std::uint64_t kSerializeTimeoutMs = 20000;

std::string claim_path(const ClaimRef& c) {
  return text::cat("/apis/resource.k8s.io/v1/namespaces/", c.ns, "/resourceclaims/", c.name);
}

// Namespace, name and uid as the ledger takes them: anything else never reaches a URL or a file.
Result<> check_ref(const ClaimRef& c) {
  if (auto r = validate_claim_name(c.ns + "/" + c.name); !r) return r;
  if (auto r = validate_kube_uid(c.uid, "uid"); !r)
    return std::unexpected(r.error().wrap("claim " + c.ns + "/" + c.name));
  return {};
}

// A dynamic-MIG profile device goes through the provisioner, which reserves first (the instance
// may exist, idle) and otherwise creates it at the device's placement; everything else is booked.
Result<Booking> book(const Config& cfg, const ReserveArgs& args, const Inventory& inv, bool dynamic_mig) {
  // SM sharing: its GPU's MPS daemon made sure of; any other share is booked as usual, a GPU idle in
  // MPS mode that keeps it out switched back to time sharing at once (nvml/mps_provision.hpp).
  if (args.request.compute_mode == ComputeMode::sm || !dynamic_mig) {
    auto provisioned = provision_mps(cfg, args, inv);
    if (!provisioned) return std::unexpected(provisioned.error());
    for (const auto& note : provisioned->notes) log::info("claim " + args.container_id + ": " + note);
    return std::move(provisioned->booking);
  }
  auto provisioned = provision_mig(cfg, args, cdi::spec_refresher(cfg));
  if (!provisioned) return std::unexpected(provisioned.error());
  for (const auto& note : provisioned->notes) log::info("claim " + args.container_id + ": " + note);
  if (provisioned->created)
    log::info(text::cat("claim ", args.container_id, ": made MIG ", provisioned->created->device_profile, " in ",
                        provisioned->created->profile_name, "@", provisioned->created->placement.start, " on GPU ",
                        provisioned->booking.grant.gpu_index));
  return std::move(provisioned->booking);
}

ReserveArgs reserve_args(const ClaimRef& c, const ClaimShare& s) {
  ReserveArgs a;
  a.container_id = c.uid;
  a.device_key = s.device_key();
  a.request = s.booking;
  a.source = BookingSource::dra;
  a.instance = kClaimInstance;
  a.claim = c.ns + "/" + c.name;
  return a;
}

}  // namespace

DraDriver::DraDriver(Config cfg, DriverOptions options, const ApiClient& api)
    : cfg_(std::move(cfg)), options_(std::move(options)), api_(api) {}

DraDriver::FileStamp DraDriver::checkpoint_stamp() const {
  struct stat st {};
  if (::stat(options_.checkpoint_path.c_str(), &st) != 0) return {};
  return {st.st_ino, st.st_size, static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

Result<LedgerLock> DraDriver::serialize() {
  auto held = LedgerLock::acquire(fs::dirname(options_.checkpoint_path) + "/serialize.lock", kSerializeTimeoutMs,
                                  cfg_.proc_root, "gpufrac-dra's lock", "; is another gpufrac-dra instance stuck?");
  if (!held) return held;
  if (const FileStamp now = checkpoint_stamp(); !(now == stamp_)) {  // another instance wrote it
    auto cp = load_checkpoint(options_.checkpoint_path);
    if (!cp) return std::unexpected(cp.error());
    checkpoint_ = std::move(*cp);
    stamp_ = now;
  }
  return held;
}

Result<> DraDriver::save() {
  if (auto r = save_checkpoint(options_.checkpoint_path, checkpoint_); !r) return r;
  stamp_ = checkpoint_stamp();
  return {};
}

Result<> DraDriver::start() {
  std::lock_guard lock(mutex_);
  stamp_ = {0, -2, 0};  // matches no file: the first serialize() reads it
  auto held = serialize();
  if (!held) return std::unexpected(held.error());
  std::vector<std::string> half;
  for (const auto& [uid, c] : checkpoint_.claims)
    if (c.state == PrepareState::started) half.push_back(uid);
  for (const auto& uid : half) {
    log::warn("claim " + uid + " was left half-prepared: rolling it back");
    if (auto r = unprepare_locked(uid); !r) return std::unexpected(r.error());
  }
  auto state = Ledger(LedgerOptions::from(cfg_)).read();
  if (!state) return std::unexpected(state.error());
  std::set<std::string> orphans;
  for (const auto& e : state->entries)
    if (e.claim_owned() && !checkpoint_.claims.contains(e.container_id)) orphans.insert(e.container_id);
  for (const auto& uid : orphans) {
    log::warn("claim " + uid + " has bookings but no checkpoint entry: releasing them");
    if (auto r = unprepare_locked(uid); !r) return std::unexpected(r.error());
  }
  return {};
}

Result<nlohmann::json> DraDriver::fetch(const ClaimRef& c) const {
  const std::string path = claim_path(c);
  auto r = api_.call("GET", path);
  if (!r) return std::unexpected(r.error().wrap("claim " + c.describe()));
  if (r->status != 200) return user_error(text::cat("claim ", c.describe(), ": ", describe_failure("GET", path, *r)));
  auto doc = object_answer(*r, "GET", path);
  if (!doc) return std::unexpected(doc.error().wrap("claim " + c.describe()));
  return doc;
}

PrepareResult DraDriver::prepare(const ClaimRef& claim) {
  if (auto r = check_ref(claim); !r) return {{}, r.error().message};
  std::lock_guard lock(mutex_);
  auto held = serialize();
  auto devices = held ? prepare_locked(claim) : std::unexpected(held.error());
  if (!devices) {
    log::warn("prepare: " + devices.error().message);
    return {{}, devices.error().message};
  }
  return {std::move(*devices), ""};
}

Result<std::vector<PreparedDevice>> DraDriver::prepare_locked(const ClaimRef& c) {
  if (auto it = checkpoint_.claims.find(c.uid);
      it != checkpoint_.claims.end() && it->second.state == PrepareState::completed)
    return it->second.devices;  // the kubelet re-sends after its restart: same answer, no side effect
  auto doc = fetch(c);
  if (!doc) return std::unexpected(doc.error());
  auto inventory = inventory_for_allocation(cfg_, discover);
  if (!inventory) return std::unexpected(inventory.error());
  auto shares = claim_shares(*doc, c, options_.node, *inventory, cfg_.mig);
  if (!shares) return std::unexpected(shares.error());
  checkpoint_.claims[c.uid] = PreparedClaim{c.ns, c.name, PrepareState::started, {}};
  if (auto r = save(); !r) return std::unexpected(r.error());
  auto done = [&]() -> Result<std::vector<PreparedDevice>> {
    Ledger ledger(LedgerOptions::from(cfg_));
    // The scheduler decided how many shares the GPU takes (its memory capacity): max-shares-per-gpu
    // is for node-local requests, which it cannot see.
    Config cfg = cfg_;
    cfg.allocation.max_shares_per_gpu = 0;
    std::vector<PreparedDevice> devices;
    bool made_mig = false;
    for (const auto& s : *shares) {
      auto b = book(cfg, reserve_args(c, s), *inventory, s.dynamic_mig);
      if (!b) return std::unexpected(b.error().wrap(text::cat("claim ", c.describe(), ": ", s.device)));
      made_mig = made_mig || s.dynamic_mig;
      devices.push_back({s.request, options_.node, s.device, s.share_id, {claim_cdi_id(c.uid)}});
    }
    fault::point("dra-after-book");  // crash tests: killed between the two checkpoint phases
    auto bookings = ledger.bookings_of_claim(c.uid);
    if (!bookings) return std::unexpected(bookings.error());
    if (made_mig) inventory = inventory_for_allocation(cfg_, discover);  // a new instance: its nodes
    if (!inventory) return std::unexpected(inventory.error());
    if (!bookings->empty())
      if (auto r = write_claim_spec(options_.cdi_dir, c.uid, *bookings, *inventory, cfg_); !r)
        return std::unexpected(r.error());
    if (wants_reclaimer(*bookings)) start_reclaimer(cfg_);
    return devices;
  }();
  if (!done) {
    if (auto r = unprepare_locked(c.uid); !r) log::warn("rollback of " + c.uid + ": " + r.error().message);
    return done;
  }
  checkpoint_.claims[c.uid] = PreparedClaim{c.ns, c.name, PrepareState::completed, *done};
  if (auto r = save(); !r) return std::unexpected(r.error());
  log::info(text::cat("prepared claim ", c.describe(), ": ", done->size(), " device(s)"));
  return done;
}

std::string DraDriver::unprepare(const ClaimRef& claim) {
  if (auto r = check_ref(claim); !r) return r.error().message;
  std::lock_guard lock(mutex_);
  auto held = serialize();
  auto r = held ? unprepare_locked(claim.uid) : std::unexpected(held.error());
  if (!r) {
    log::warn("unprepare: " + r.error().message);
    return r.error().message;
  }
  return "";
}

// The driver limits the claim's pods had (nvml/driver_limit_apply.hpp), cleared in process; one
// that cannot be cleared stays recorded for gpufrac gc, and the unprepare goes on.
void DraDriver::clear_claim_limits(const std::vector<LedgerEntry>& released) const {
  if (std::none_of(released.begin(), released.end(), [](const LedgerEntry& e) { return e.driver_limit.has_value(); }))
    return;
  auto r = clear_driver_limits(cfg_);
  if (!r) log::warn("driver limit: " + r.error().message + " (gpufrac gc clears it later)");
  for (const auto& e : r ? r->errors : std::vector<std::string>{}) log::warn("driver limit kept for gc: " + e);
}

Result<> DraDriver::unprepare_locked(const std::string& uid) {
  if (auto r = remove_claim_spec(options_.cdi_dir, uid, cfg_); !r) return r;
  auto released = Ledger(LedgerOptions::from(cfg_)).release_claim(uid);
  if (!released) return std::unexpected(released.error());
  clear_claim_limits(*released);
  if (checkpoint_.claims.erase(uid) > 0 || !released->empty()) {
    if (auto r = save(); !r) return r;
    log::info(text::cat("unprepared claim ", uid, ": released ", released->size(), " booking(s)"));
  }
  return {};
}

void DraDriver::sync() {
  std::vector<ClaimRef> prepared;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [uid, c] : checkpoint_.claims)
      if (c.state == PrepareState::completed) prepared.push_back({c.ns, c.name, uid});
  }
  for (const auto& c : prepared) {
    auto r = api_.call("GET", claim_path(c));
    if (!r || !claim_gone(r->status, r->body, c.uid)) continue;  // away, or no clear answer: keep it
    std::lock_guard lock(mutex_);
    auto held = serialize();
    if (!held || !checkpoint_.claims.contains(c.uid)) continue;  // another instance unprepared it
    log::info("claim " + c.describe() + " is gone from the API server: unpreparing it");
    if (auto u = unprepare_locked(c.uid); !u) log::warn("sync: " + u.error().message);
  }
}

}  // namespace gpufrac::dra
