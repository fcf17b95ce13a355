#include "limits/host/arbiter_checks.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>

#include "core/text.hpp"
#include "gf_arbiter.h"

namespace gpufrac::limits {

namespace {

constexpr std::uint64_t kMaxChargeNs = 2'000'000'000;  // a charge is at most 2 s (arbiter_abi.h)

std::uint32_t load32(const std::uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
std::uint64_t load64(const std::uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

void check_lease_word(const gpufrac_arbiter_slots& s, const gpufrac_arbiter& a, const gpufrac_arbiter_params& p,
                      std::uint64_t now_ns, std::vector<std::string>& out) {
  const std::uint64_t w = load64(&a.lease);
  const std::uint32_t holder = gpufrac_lease_holder(w), hw = gf_arbiter_slots_in_use(&s);
  if (holder > hw) out.push_back(text::cat("the lease names slot ", holder - 1, ", which was never set up"));
  const auto ahead =
      static_cast<std::int32_t>(gpufrac_lease_deadline(w) - static_cast<std::uint32_t>(now_ns / 1000000));
  if (holder != 0 && ahead > static_cast<std::int32_t>(p.lease_ms + p.claim_ms + 1000))
    out.push_back(text::cat("the lease's deadline is ", ahead, " ms ahead (a holder sets at most ", p.lease_ms, ")"));
  const std::uint32_t preempt = load32(&a.preempt);
  if (preempt != 0 && (preempt > hw || !(load32(&s.slots[preempt - 1].flags) & GPUFRAC_ARBITER_HIGH)))
    out.push_back(text::cat("a preemption request by slot ", preempt - 1, ", which is not high priority"));
  const std::uint32_t busy = load32(&a.busy);
  const auto until = static_cast<std::int64_t>(load64(&a.busy_until_ns) - now_ns);
  if (holder != 0 && busy == gpufrac_lease_epoch(w) + 1 &&
      until > static_cast<std::int64_t>(p.busy_ms + 1000) * 1000000)
    out.push_back(text::cat("the holder says it is busy for ", until / 1000000, " ms more (at most ", p.busy_ms, ")"));
}

void check_charges(const gpufrac_arbiter_slots& s, const gpufrac_arbiter_lane* lanes, std::uint64_t now_ns,
                   std::vector<std::string>& out) {
  std::uint64_t sum = 0;
  for (unsigned i = 0, hw = gf_arbiter_slots_in_use(&s); i < hw; i++) {
    for (const std::uint64_t& b : lanes[i].history) {
      const std::uint64_t ns = load64(&b) & ((1ull << 40) - 1);
      if (ns > 1'000'000'000 + kMaxChargeNs) {
        out.push_back(text::cat("slot ", i, " was charged ", ns / 1000000, " ms in one second"));
        return;
      }
    }
    sum += gf_arbiter_window_ns(&lanes[i], now_ns);
  }
  const std::uint64_t window = GPUFRAC_ARBITER_WINDOW_S * 1'000'000'000ull;
  if (sum > window + 2 * kMaxChargeNs)
    out.push_back(
        text::cat("its slots were charged ", sum / 1000000, " ms in the last ", GPUFRAC_ARBITER_WINDOW_S, " s"));
}

std::string slot_name(const gpufrac_arbiter_slots& s, unsigned i) {
  const gpufrac_arbiter_slot& slot = s.slots[i];
  return text::cat("slot ", i, " (", std::string(slot.key, strnlen(slot.key, GPUFRAC_ARBITER_KEY)), ")");
}

// The queue lanes (arbiter_abi.h "Runnable", "Charge"): no shim following the protocol leaves a
// runnable slot more than one lease and its overrun of its own time behind vclock (its heartbeat
// floors it there; kLaneSlackNs more for the clock moving between heartbeats), puts a vtime farther
// ahead of vclock than kLaneAheadNs of its own time (charges are at most 2 s each, and vclock
// follows every claim), or a heartbeat or claim in the future. Each names the slot whose lane lies.
constexpr std::uint64_t kLaneSlackNs = 1'000'000'000, kLaneAheadNs = 10'000'000'000;

void check_lanes(const gpufrac_arbiter_slots& s, const gpufrac_arbiter& a, const gpufrac_arbiter_lane* lanes,
                 const gpufrac_arbiter_params& p, std::uint64_t now_ns, std::vector<std::string>& out) {
  const std::uint64_t vclock = load64(&a.vclock);
  for (unsigned i = 0, hw = gf_arbiter_slots_in_use(&s); i < hw; i++) {
    if (load32(&s.slots[i].state) != GPUFRAC_ARBITER_ACTIVE) continue;
    const gpufrac_arbiter_lane& lane = lanes[i];
    const std::uint64_t w = gf_arbiter_weight(&s.slots[i]), seen = load64(&lane.seen_ns);
    const auto vt_ms = [w](std::int64_t d) { return d / 1000 * static_cast<std::int64_t>(w) / 1'000'000; };
    const auto future = static_cast<std::int64_t>(std::max(seen, load64(&lane.claimed_ns)) - now_ns);
    if (future > 1'000'000'000) {
      out.push_back(
          text::cat(slot_name(s, i), "'s lane says it waited or claimed ", future / 1000000, " ms in the future"));
      continue;
    }
    const bool runnable = seen != 0 && static_cast<std::int64_t>(now_ns - seen) < std::int64_t{p.runnable_us} * 1000;
    const auto behind = static_cast<std::int64_t>(vclock - load64(&lane.vtime));
    const std::uint64_t lag_ns = (std::uint64_t{p.lease_ms} + p.busy_ms) * 1'000'000 + kLaneSlackNs;
    if (runnable && behind > 0 && static_cast<std::uint64_t>(behind) > lag_ns * 1000 / w)
      out.push_back(text::cat(slot_name(s, i), "'s lane is ", vt_ms(behind),
                              " ms of its time behind the queue (at most ", lag_ns / 1000000, ")"));
    if (-behind > 0 && static_cast<std::uint64_t>(-behind) > kLaneAheadNs * 1000 / w)
      out.push_back(text::cat(slot_name(s, i), "'s lane is ", vt_ms(-behind),
                              " ms of its time ahead of the queue (at most ", kLaneAheadNs / 1000000, ")"));
  }
}

// What a lane's owner saw other lanes do (arbiter_abi.h, suspect: written by the shims' views,
// limits/shim/lease_view.c) in the last kSuspectShownS: an accusation by the owner, one line each.
constexpr std::uint64_t kSuspectShownS = 600;

void check_suspects(const gpufrac_arbiter_slots& s, const gpufrac_arbiter_lane* lanes, std::vector<std::string>& out) {
  const auto now = static_cast<std::uint64_t>(std::time(nullptr));
  const unsigned hw = gf_arbiter_slots_in_use(&s);
  for (unsigned i = 0; i < hw; i++) {
    if (load32(&s.slots[i].state) != GPUFRAC_ARBITER_ACTIVE) continue;
    for (const gpufrac_arbiter_suspect& e : lanes[i].suspect) {
      const std::uint32_t j = e.slot, what = e.what;
      if (j == 0 || j > hw || j - 1 == i || e.seen_at_s > now || now - e.seen_at_s > kSuspectShownS) continue;
      if (load32(&s.slots[j - 1].state) != GPUFRAC_ARBITER_ACTIVE) continue;
      const char* lie = what == GF_LIE_BACK     ? "'s lane move back"
                        : what == GF_LIE_UNREAD ? "'s lane cut short or missing"
                        : what == GF_LIE_BEHIND ? "'s lane stay far behind the queue while it waited"
                                                : "'s lane lie";
      out.push_back(text::cat(slot_name(s, i), " saw ", slot_name(s, j - 1), lie, " (in the last ", kSuspectShownS / 60,
                              " minutes)"));
    }
  }
}

}  // namespace

std::vector<std::string> lease_file_problems(const gpufrac_arbiter_slots& slots, const gpufrac_arbiter& lease,
                                             const gpufrac_arbiter_lane* lanes, std::uint64_t now_ns) {
  std::vector<std::string> out;
  char err[256];
  if (gf_arbiter_check(&lease, err, sizeof err) != 0) {
    out.push_back(text::cat("its lease file's header: ", err));
    return out;
  }
  gpufrac_arbiter_params p;
  gf_arbiter_params(&slots, &p);
  check_lease_word(slots, lease, p, now_ns, out);
  check_charges(slots, lanes, now_ns, out);
  check_lanes(slots, lease, lanes, p, now_ns, out);
  check_suspects(slots, lanes, out);
  return out;
}

}  // namespace gpufrac::limits
