#include "limits/host/region_guard.hpp"

#include <setjmp.h>
#include <signal.h>

#include "gf_lock.h"
#include "gf_region.h"

namespace gpufrac::limits {

namespace {

thread_local sigjmp_buf* t_guard = nullptr;  // armed while a guarded access runs

void on_sigbus(int sig, siginfo_t*, void*) {
  if (t_guard != nullptr) siglongjmp(*t_guard, 1);
  ::signal(sig, SIG_DFL);  // not ours: the default action, as if no handler were installed
  ::raise(sig);
}

bool swap(std::uint64_t* p, std::uint64_t expected, std::uint64_t desired) {
  return __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

// Runs f() with the guard armed: true when it finished, false after a SIGBUS in it. f must own no
// object with a destructor (siglongjmp skips them).
template <class F>
bool guarded(F&& f) {
  sigjmp_buf jb;
  if (sigsetjmp(jb, 1) != 0) {
    t_guard = nullptr;
    return false;
  }
  t_guard = &jb;
  f();
  t_guard = nullptr;
  return true;
}

// CAS owner -> mine, zero, count, CAS -> free; false when the owner word changed.
bool reclaim_slot(gpufrac_region* r, gpufrac_slot* s, std::uint64_t seen, std::uint64_t mine) {
  if (!swap(&s->owner, seen, mine)) return false;  // someone else changed it: theirs now
  for (auto& u : s->used) __atomic_store_n(&u, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->compute_bypassed, 0, __ATOMIC_SEQ_CST);
  gf_region_count_change(r);
  swap(&s->owner, mine, 0);
  return true;
}

}  // namespace

void install_region_guard() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

std::optional<unsigned> reclaim_guarded(gpufrac_region* r, const std::vector<DeadSlot>& dead, std::uint64_t me,
                                        int fd) {
  const std::uint64_t mine = gpufrac_owner(gpufrac_owner_pid(me), gpufrac_owner_start(me), GPUFRAC_SLOT_RECLAIMING);
  const DeadSlot* slots = dead.data();
  const std::size_t count = dead.size();
  unsigned reclaimed = 0;
  const bool ok = guarded([&] {
    for (std::size_t i = 0; i < count; ++i) {
      if (slots[i].index >= GPUFRAC_MAX_SLOTS) continue;
      const unsigned index = slots[i].index;
      gpufrac_slot* s = &r->slots[index];
      const bool by_lock = gpufrac_owner_state(slots[i].owner) != GPUFRAC_SLOT_OWNED;
      if (by_lock && gf_slot_lock(fd, index) != 0) continue;  // held: alive, or being claimed or reclaimed
      if (reclaim_slot(r, s, slots[i].owner, mine)) ++reclaimed;
      if (by_lock) gf_slot_unlock(fd, index);
    }
  });
  if (!ok) return std::nullopt;
  return reclaimed;
}

}  // namespace gpufrac::limits
