#include "limits/host/region_guard.hpp"

#include <setjmp.h>
#include <signal.h>

#include <algorithm>
#include <cstring>

#include "gf_proc.h"
#include "gf_region.h"

namespace gpufrac::limits {

namespace {

thread_local sigjmp_buf* t_guard = nullptr;  // armed while a guarded access runs

void on_sigbus(int sig, siginfo_t*, void*) {
  if (t_guard != nullptr) siglongjmp(*t_guard, 1);
  ::signal(sig, SIG_DFL);  // not ours: the default action, as if no handler were installed
  ::raise(sig);
}

template <class T>
T load(const T* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
template <class T>
void store(T* p, T v) {
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
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

}  // namespace

void install_region_guard() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

bool read_region_guarded(const gpufrac_region* r, unsigned device, RegionReading& out) {
  out.owners.assign(GPUFRAC_MAX_SLOTS, 0);
  out.used.assign(GPUFRAC_MAX_SLOTS, 0);
  std::uint64_t* owners = out.owners.data();
  std::uint64_t* used = out.used.data();
  unsigned n = 0;
  const unsigned dev = std::min<unsigned>(device, GPUFRAC_MAX_DEVICES - 1);
  const bool ok = guarded([&] {
    n = gf_region_slots_in_use(r);
    for (unsigned i = 0; i < n; ++i) {
      owners[i] = load(&r->slots[i].owner);
      used[i] = load(&r->slots[i].used[dev]);
    }
    out.reclaim_asked = load(&r->reclaim_asked);
    out.reclaim_answered = load(&r->reclaim_answered);
    out.reclaim_device = load(&r->reclaim_device);
    out.reclaim_bytes = load(&r->reclaim_bytes);
  });
  out.owners.resize(ok ? n : 0);
  out.used.resize(ok ? n : 0);
  return ok;
}

std::uint64_t live_use(const RegionReading& reading, const std::string& proc_root) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < reading.owners.size(); ++i) {
    const std::uint64_t owner = reading.owners[i];
    if (owner == 0 || gpufrac_owner_state(owner) != GPUFRAC_SLOT_OWNED) continue;
    if (gf_proc_liveness(proc_root.c_str(), gpufrac_owner_pid(owner), gpufrac_owner_start(owner)) == GF_DEAD) continue;
    sum = reading.used[i] > UINT64_MAX - sum ? UINT64_MAX : sum + reading.used[i];
  }
  return sum;
}

bool publish_guarded(gpufrac_region* r, std::uint32_t beat, bool burst, std::uint8_t device, std::uint64_t ceiling) {
  return guarded([&] {
    if (burst) {
      store(&r->burst_ceiling, ceiling);
      store(&r->burst_device, device);
    }
    store(&r->reclaimer_beat, beat);
  });
}

bool answer_guarded(gpufrac_region* r, std::uint32_t answered, std::uint8_t answer) {
  return guarded([&] {
    store(&r->reclaim_answer, answer);
    store(&r->reclaim_answered, answered);
  });
}

}  // namespace gpufrac::limits
