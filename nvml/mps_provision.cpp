#include "nvml/mps_provision.hpp"

#include "core/ledger/ledger_mps.hpp"
#include "core/plan/plan_mps.hpp"
#include "nvml/mps_keeper.hpp"

namespace gpufrac {

namespace {

// Undoes step 2 after step 3 failed: only a booking this run made.
void release_new(Ledger& ledger, const ReserveArgs& args, const Booking& booking) {
  if (booking.existing) return;
  if (args.source == BookingSource::dra)
    (void)ledger.release_claim(args.container_id);
  else
    (void)ledger.release(args.container_id, args.instance);
}

}  // namespace

Result<MpsProvisionResult> provision_mps(const Config& cfg, const ReserveArgs& args, const Inventory& inv) {
  Ledger ledger(LedgerOptions::from(cfg));
  MpsProvisionResult out;
  auto reclaimed = reclaim_idle_mps(cfg, inv, ledger);
  if (!reclaimed) return std::unexpected(reclaimed.error());
  out.notes = reclaimed->notes;
  out.notes.insert(out.notes.end(), reclaimed->stopped.begin(), reclaimed->stopped.end());
  auto booking = ledger.reserve(args, inv, cfg.allocation);
  if (!booking) return std::unexpected(booking.error());
  out.booking = std::move(*booking);
  if (const Grant* g = sm_grant_of(out.booking.grants)) {
    auto started = ensure_mps_daemon(cfg, inv, g->gpu_uuid);
    if (!started) {
      release_new(ledger, args, out.booking);
      return std::unexpected(started.error());
    }
    out.notes.insert(out.notes.end(), started->begin(), started->end());
  }
  return out;
}

}  // namespace gpufrac
