#include "core/ledger/ledger_book.hpp"

#include <algorithm>

#include "core/allocator/allocator.hpp"
#include "core/fault.hpp"
#include "core/ledger/ledger_mig.hpp"
#include "core/ledger/ledger_mps.hpp"
#include "core/text.hpp"

namespace gpufrac::ledger_detail {

namespace {

// The entries booked for (container id, instance, device key): the key's own, or the entries of a
// multi-GPU share asked under it, by their GPU's position.
std::vector<LedgerEntry*> booked_under(LedgerState& s, const ReserveArgs& a) {
  const bool claim = a.source == BookingSource::dra;
  std::vector<LedgerEntry*> out;
  for (auto& e : s.entries)
    if (e.claim_owned() == claim && e.container_id == a.container_id && e.instance == a.instance &&
        base_device_key(e.device_key) == a.device_key)
      out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const LedgerEntry* x, const LedgerEntry* y) {
    auto kx = parse_gpus_device_key(x->device_key), ky = parse_gpus_device_key(y->device_key);
    return (kx ? kx->position + 1 : 0) < (ky ? ky->position + 1 : 0);
  });
  return out;
}

// A retried reservation: the same grants, the pid given to pending entries.
Result<Booking> existing(const std::vector<LedgerEntry*>& mine, const ReserveArgs& a, std::uint64_t start,
                         bool& changed) {
  const std::string asked = a.request.describe();
  for (LedgerEntry* e : mine)
    if (e->request != asked)
      return user_error(text::cat("container ", a.container_id, " already holds a booking for ", e->request,
                                  "; release it before asking for ", asked));
  if (mine.size() != a.request.gpu_count())
    return internal_error(text::cat("container ", a.container_id, " holds ", mine.size(), " of the ",
                                    a.request.gpu_count(), " bookings of ", asked,
                                    " (the ledger was edited by hand?); release it and start it again"));
  Booking b;
  for (LedgerEntry* e : mine) {
    if (e->pending() && a.pid != 0) {
      e->pid = a.pid;
      e->pid_start = start;
      changed = true;
    }
    b.grants.push_back(grant_of(*e));
  }
  b.grant = b.grants.front();
  b.existing = true;
  return b;
}

// An SM share is its holder's only GPU booking: its processes are clients of that GPU's MPS server,
// which shows them that GPU alone (docs/architecture.md "SM sharing").
Result<> check_sm_alone(const LedgerState& s, const ReserveArgs& a) {
  const bool claim = a.source == BookingSource::dra;
  const bool sm = a.request.compute_mode == ComputeMode::sm;
  for (const auto& e : s.entries) {
    if (e.claim_owned() != claim || e.container_id != a.container_id || e.instance != a.instance) continue;
    const bool other_sm = is_sm_share(e.compute_ppm, e.compute_mode);
    if (sm || other_sm)
      return user_error(text::cat(claim ? "claim " : "container ", a.container_id, " holds ",
                                  other_sm ? "an SM share of GPU " : "a booking of GPU ", e.gpu_index, " (", e.request,
                                  "); an SM share must be its only GPU (a process is the client of one GPU's MPS "
                                  "server), so ",
                                  a.request.describe(), " is refused"));
  }
  return {};
}

}  // namespace

LedgerEntry entry_for(const ReserveArgs& a, const std::string& device_key, const Grant& g, std::uint64_t pid_start,
                      std::int64_t now) {
  LedgerEntry e{a.container_id, device_key,           g.device_uuid,  g.gpu_index, g.gpu_uuid, g.mig, g.bytes,
                g.exclusive,    a.request.describe(), a.source,       a.pid,       pid_start,  now,   a.instance,
                a.claim,        g.compute_ppm,        g.compute_mode, g.priority};
  e.limit_bytes = g.limit_bytes;
  e.wait_ms = a.request.wait_ms.value_or(0);
  return e;
}

MigHolder holder_of(const ReserveArgs& a) {
  return MigHolder{a.container_id, a.instance, a.source == BookingSource::dra};
}

Result<Booking> book(LedgerState& state, const ReserveArgs& a, std::uint64_t start, const Inventory& inv,
                     const AllocationConfig& cfg, const MigConfig& mig, std::int64_t now, bool& changed) {
  if (auto mine = booked_under(state, a); !mine.empty()) return existing(mine, a, start, changed);
  if (auto r = check_sm_alone(state, a); !r) return std::unexpected(r.error());
  auto grants =
      allocate_gpus(a.request, inv, state.entries, cfg, DynamicMig{&mig, &state.mig_idle}, holder_of(a), state.mps);
  if (!grants) return std::unexpected(grants.error());
  std::vector<std::string> keys;
  for (std::size_t k = 0; k < grants->size(); ++k) {
    keys.push_back(a.request.multi_gpu() ? gpus_device_key(a.device_key, k) : a.device_key);
    if (auto r = validate_device_key(keys.back()); !r) return std::unexpected(r.error());
  }
  for (std::size_t k = 0; k < grants->size(); ++k) {
    drop_idle_record(state, (*grants)[k].device_uuid);
    state.entries.push_back(entry_for(a, keys[k], (*grants)[k], start, now));
    if (k == 0 && grants->size() > 1) fault::point("ledger-between-gpus");
  }
  record_mps_gpus(state, *grants, now);
  changed = true;
  Booking b;
  b.grant = grants->front();
  b.grants = std::move(*grants);
  return b;
}

}  // namespace gpufrac::ledger_detail
