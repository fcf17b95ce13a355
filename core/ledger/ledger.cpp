#include "core/ledger/ledger.hpp"

#include <algorithm>
#include <ctime>

#include "core/allocator/allocator.hpp"
#include "core/fault.hpp"
#include "core/ledger/ledger_book.hpp"
#include "core/ledger/ledger_file.hpp"
#include "core/ledger/ledger_limits.hpp"
#include "core/ledger/ledger_mig.hpp"
#include "core/ledger/ledger_mps.hpp"
#include "core/mig/mig_fit.hpp"
#include "core/process.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

// The lock plus the content read under it.
struct Transaction {
  LedgerLock lock;
  LedgerState state;
};

Result<Transaction> begin(const LedgerOptions& o) {
  auto lock = LedgerLock::acquire(o.lock_path, o.lock_timeout_ms, o.proc_root);
  if (!lock) return std::unexpected(lock.error());
  fault::point("ledger-after-lock");
  auto state = load_ledger_file(o.path);
  if (!state) return std::unexpected(state.error());
  return Transaction{std::move(*lock), std::move(*state)};
}

// Whether the entry belongs to the container instance ("" selects every instance of the id). A
// claim's bookings never belong to a container, whatever its id.
bool of_instance(const LedgerEntry& e, const std::string& id, const std::string& instance) {
  return !e.claim_owned() && e.container_id == id && (instance.empty() || e.instance == instance);
}

LedgerEntry* find(LedgerState& s, const ReserveArgs& a) {
  const bool claim = a.source == BookingSource::dra;
  auto it = std::find_if(s.entries.begin(), s.entries.end(), [&](const LedgerEntry& e) {
    return e.claim_owned() == claim && e.container_id == a.container_id && e.instance == a.instance &&
           e.device_key == a.device_key;
  });
  return it == s.entries.end() ? nullptr : &*it;
}

// A MIG grant made outside the allocator (the provisioner): its GPU instance's memory and the
// one-compute-instance-per-GPU-instance rule hold against the bookings now.
Result<> check_granted(const LedgerState& s, const ReserveArgs& a, const Grant& g, std::uint64_t gi_memory) {
  for (const auto& e : s.entries)
    if (e.device_uuid == g.device_uuid) return user_error(text::cat(g.device_uuid, " is booked by ", e.container_id));
  if (!g.mig) return {};
  const auto held = held_gpu_instances(s.entries, ledger_detail::holder_of(a));
  if (std::find(held.begin(), held.end(), std::pair{g.gpu_uuid, g.mig->gi}) != held.end())
    return user_error(text::cat(a.container_id, " holds a compute instance of GPU ", g.gpu_index, " gi ", g.mig->gi,
                                " already; CUDA enumerates one compute instance per GPU instance"));
  const std::uint64_t booked = gi_booked_bytes(s.entries, g.gpu_uuid, g.mig->gi);
  if (gi_memory != 0 && booked + g.bytes > gi_memory)
    return user_error(text::cat("GPU ", g.gpu_index, " gi ", g.mig->gi, " has ",
                                text::format_bytes(gi_memory > booked ? gi_memory - booked : 0),
                                " of its memory left; ", g.device_uuid, " needs ", text::format_bytes(g.bytes)));
  return {};
}

}  // namespace

LedgerOptions LedgerOptions::from(const Config& cfg) {
  LedgerOptions o;
  o.path = cfg.ledger_path();
  o.lock_path = cfg.ledger_lock_path();
  o.proc_root = cfg.proc_root;
  o.pending_timeout_s = cfg.allocation.pending_timeout_s;
  o.lock_timeout_ms = cfg.lock_timeout_s * 1000;
  o.mig = cfg.mig;
  return o;
}

Ledger::Ledger(LedgerOptions options) : options_(std::move(options)) {}

std::int64_t Ledger::now() const {
  if (options_.clock) return options_.clock();
  return static_cast<std::int64_t>(std::time(nullptr));
}

std::string Ledger::expiry(const LedgerEntry& e, std::int64_t t) const {
  if (e.claim_owned()) return "";  // held until the claim is unprepared, whatever runs
  if (e.pending())
    return t - e.created > static_cast<std::int64_t>(options_.pending_timeout_s)
               ? text::cat("pending for ", t - e.created, " s")
               : "";
  Liveness l = process_liveness(options_.proc_root, e.pid, e.pid_start);
  if (l == Liveness::exited) return text::cat("process ", e.pid, " exited");
  if (l == Liveness::reused) return text::cat("pid ", e.pid, " was reused");
  return "";
}

std::vector<Reclaimed> Ledger::reclaim(LedgerState& state, bool processes) const {
  std::vector<Reclaimed> out;
  const std::int64_t t = now();
  std::erase_if(state.entries, [&](const LedgerEntry& e) {
    std::string why = processes || e.pending() ? expiry(e, t) : "";
    if (!why.empty()) out.push_back(Reclaimed{e, why});
    return !why.empty();
  });
  std::vector<LedgerEntry> gone;
  for (const auto& r : out) gone.push_back(r.entry);
  record_idle(state, gone, options_.mig, t);
  record_limits_to_clear(state, gone, t);
  record_mps_idle(state, gone, t);
  return out;
}

Result<std::uint64_t> Ledger::start_time_of(std::int64_t pid, std::optional<std::uint64_t> given) const {
  if (pid < 0 || pid > kMaxPid) return user_error(text::cat("pid ", pid, " is not valid; use 1-", kMaxPid));
  if (pid == 0) return 0;
  if (given) return *given;
  auto stat = read_proc_stat(options_.proc_root, pid);
  if (!stat) return user_error(text::cat("process ", pid, " does not exist (", stat.error().message, ")"));
  return stat->start_time;
}

Result<std::uint64_t> Ledger::checked_start(const ReserveArgs& a) const {
  if (auto r = validate_container_id(a.container_id); !r) return std::unexpected(r.error());
  if (auto r = validate_optional_instance(a.instance); !r) return std::unexpected(r.error());
  if (auto r = validate_device_key(a.device_key); !r) return std::unexpected(r.error());
  if ((a.source == BookingSource::dra) != !a.claim.empty())
    return user_error("a claim name goes with a dra booking, and only there");
  if (!a.claim.empty()) {
    if (auto r = validate_claim_name(a.claim); !r) return std::unexpected(r.error());
    if (a.pid != 0) return user_error("a claim's booking has no pid");
  }
  return start_time_of(a.pid, a.pid_start);
}

Result<Booking> Ledger::reserve(const ReserveArgs& a, const Inventory& inv, const AllocationConfig& cfg) {
  auto start = checked_start(a);
  if (!start) return std::unexpected(start.error());
  auto tx = begin(options_);
  if (!tx) return std::unexpected(tx.error().wrap("while booking " + a.container_id));
  // Dead processes matter only to a refusal: decide first, check liveness only if refused.
  auto reclaimed = reclaim(tx->state, false);
  bool changed = !reclaimed.empty();
  auto booking = ledger_detail::book(tx->state, a, *start, inv, cfg, options_.mig, now(), changed);
  if (!booking && booking.error().kind == ErrorKind::user) {
    auto dead = reclaim(tx->state);
    if (!dead.empty()) {
      changed = true;
      reclaimed.insert(reclaimed.end(), dead.begin(), dead.end());
      booking = ledger_detail::book(tx->state, a, *start, inv, cfg, options_.mig, now(), changed);
    }
  }
  if (changed)
    if (auto r = save_ledger_file(options_.path, tx->state); !r) return std::unexpected(r.error());
  if (booking) booking->reclaimed = std::move(reclaimed);
  return booking;
}

Result<std::vector<LedgerEntry>> Ledger::attach(const std::string& id, std::int64_t pid,
                                                std::optional<std::uint64_t> pid_start, const std::string& instance) {
  if (auto r = validate_container_id(id); !r) return std::unexpected(r.error());
  if (pid == 0) return user_error("pid 0 is not valid; use the container's host pid");
  auto start = start_time_of(pid, pid_start);
  if (!start) return std::unexpected(start.error());
  auto tx = begin(options_);
  if (!tx) return std::unexpected(tx.error().wrap("while attaching " + id));
  std::vector<LedgerEntry> mine;
  bool changed = false;
  for (auto& e : tx->state.entries) {
    if (!of_instance(e, id, instance)) continue;
    if (e.pending()) {
      e.pid = pid;
      e.pid_start = *start;
      changed = true;
    }
    mine.push_back(e);
  }
  if (mine.empty())
    return user_error(text::cat("container ", id, " has no booking to attach (released, or pending for more than ",
                                options_.pending_timeout_s, " s)"));
  if (changed)
    if (auto r = save_ledger_file(options_.path, tx->state); !r) return std::unexpected(r.error());
  return mine;
}

Result<std::vector<LedgerEntry>> Ledger::release_claim(const std::string& uid) {
  return remove_if(uid, [&](const LedgerEntry& e) { return e.claim_owned(); });
}

Result<std::vector<LedgerEntry>> Ledger::bookings_of_claim(const std::string& uid) const {
  auto state = read();
  if (!state) return std::unexpected(state.error());
  std::vector<LedgerEntry> mine;
  for (const auto& e : state->entries)
    if (e.claim_owned() && e.container_id == uid) mine.push_back(e);
  return mine;
}

Result<std::vector<LedgerEntry>> Ledger::remove_if(const std::string& id,
                                                   const std::function<bool(const LedgerEntry&)>& doomed) {
  if (auto r = validate_container_id(id); !r) return std::unexpected(r.error());
  auto tx = begin(options_);
  if (!tx) return std::unexpected(tx.error().wrap("while releasing " + id));
  std::vector<LedgerEntry> removed;
  std::erase_if(tx->state.entries, [&](const LedgerEntry& e) {
    if (e.container_id != id || !doomed(e)) return false;
    removed.push_back(e);
    return true;
  });
  record_idle(tx->state, removed, options_.mig, now());
  record_limits_to_clear(tx->state, removed, now());
  record_mps_idle(tx->state, removed, now());
  if (!removed.empty())
    if (auto r = save_ledger_file(options_.path, tx->state); !r) return std::unexpected(r.error());
  return removed;
}

Result<std::vector<LedgerEntry>> Ledger::release(const std::string& id, const std::string& instance) {
  if (auto r = validate_optional_instance(instance); !r) return std::unexpected(r.error());
  return remove_if(id, [&](const LedgerEntry& e) { return of_instance(e, id, instance); });
}

Result<std::vector<LedgerEntry>> Ledger::release_stopped(const std::string& id, const std::string& instance,
                                                         std::int64_t pid) {
  if (auto r = validate_optional_instance(instance); !r) return std::unexpected(r.error());
  const std::int64_t t = now();
  return remove_if(id, [&](const LedgerEntry& e) {
    if (e.claim_owned()) return false;
    if (!instance.empty() && e.instance == instance) return true;
    if (pid != 0 && e.pid == pid) return true;
    return !e.pending() && !expiry(e, t).empty();
  });
}

Result<GcReport> Ledger::gc() {
  auto tx = begin(options_);
  if (!tx) return std::unexpected(tx.error().wrap("while collecting"));
  GcReport report;
  report.reclaimed = reclaim(tx->state);
  report.kept = tx->state.entries.size();
  if (!report.reclaimed.empty())
    if (auto r = save_ledger_file(options_.path, tx->state); !r) return std::unexpected(r.error());
  auto temps = remove_stale_temp_files(options_.path);
  if (!temps) return std::unexpected(temps.error());
  report.temp_files_removed = std::move(*temps);
  return report;
}

Result<> Ledger::fit_reserve() {
  auto lock = LedgerLock::acquire(options_.lock_path, options_.lock_timeout_ms, options_.proc_root);
  if (!lock) return std::unexpected(lock.error().wrap("while sizing the ledger's reserve"));
  return fit_ledger_reserve(options_.path);
}

Result<LedgerState> Ledger::read() const {
  return load_ledger_file(options_.path);
}

Result<std::vector<LedgerEntry>> Ledger::bookings_of(const std::string& container_id,
                                                     const std::string& instance) const {
  auto state = read();
  if (!state) return std::unexpected(state.error());
  std::vector<LedgerEntry> mine;
  for (const auto& e : state->entries)
    if (of_instance(e, container_id, instance)) mine.push_back(e);
  return mine;
}

Result<Booking> Ledger::reserve_granted(const ReserveArgs& a, const Grant& g, std::uint64_t gi_memory) {
  auto start = checked_start(a);
  if (!start) return std::unexpected(start.error());
  auto tx = begin(options_);
  if (!tx) return std::unexpected(tx.error().wrap("while booking " + a.container_id));
  Booking b;
  b.reclaimed = reclaim(tx->state);
  if (const LedgerEntry* e = find(tx->state, a)) {
    if (e->request != a.request.describe() || e->device_uuid != g.device_uuid)
      return user_error(text::cat("container ", a.container_id, " already holds a booking for ", e->request, " on ",
                                  e->device_uuid, "; release it first"));
    b.grant = grant_of(*e);
    b.grants = {b.grant};
    b.existing = true;
    return b;
  }
  if (auto ok = check_granted(tx->state, a, g, gi_memory); !ok) return std::unexpected(ok.error());
  drop_idle_record(tx->state, g.device_uuid);
  tx->state.entries.push_back(ledger_detail::entry_for(a, a.device_key, g, *start, now()));
  if (auto r = save_ledger_file(options_.path, tx->state); !r) return std::unexpected(r.error());
  b.grant = g;
  b.grants = {g};
  return b;
}

Result<std::vector<Reclaimed>> Ledger::update(const Change& change) {
  auto tx = begin(options_);
  if (!tx) return std::unexpected(tx.error().wrap("while updating the ledger"));
  auto reclaimed = reclaim(tx->state);
  auto changed = change(tx->state);
  if (!changed) return std::unexpected(changed.error());
  if (*changed || !reclaimed.empty())
    if (auto r = save_ledger_file(options_.path, tx->state); !r) return std::unexpected(r.error());
  return reclaimed;
}

}  // namespace gpufrac
