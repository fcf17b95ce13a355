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

// A time share (or whole GPU): booked as usual; while it is refused (a user error) and a GPU sits
// idle in MPS mode, that GPU goes back to time sharing at once (lowest index first) and the booking
// is tried again.
Result<MpsProvisionResult> provision_time_share(const Config& cfg, const ReserveArgs& args, const Inventory& inv,
                                                Ledger& ledger) {
  MpsProvisionResult out;
  auto booking = ledger.reserve(args, inv, cfg.allocation);
  auto state = ledger.read();
  if (!state) return std::unexpected(state.error());
  const bool refused = !booking && booking.error().kind == ErrorKind::user;
  for (const auto& gpu : refused ? idle_mps_gpus(inv, *state) : std::vector<std::string>{}) {
    auto back = switch_back_idle_gpu(cfg, inv, ledger, gpu);
    if (!back) return std::unexpected(back.error());
    out.notes.insert(out.notes.end(), back->notes.begin(), back->notes.end());
    out.notes.insert(out.notes.end(), back->stopped.begin(), back->stopped.end());
    booking = ledger.reserve(args, inv, cfg.allocation);
    if (booking || booking.error().kind != ErrorKind::user) break;
  }
  if (!booking) return std::unexpected(booking.error());
  out.booking = std::move(*booking);
  return out;
}

}  // namespace

Result<MpsProvisionResult> provision_mps(const Config& cfg, const ReserveArgs& args, const Inventory& inv) {
  Ledger ledger(LedgerOptions::from(cfg));
  if (args.request.compute_mode != ComputeMode::sm) return provision_time_share(cfg, args, inv, ledger);
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
