/* Contexts of the simulated GPU (fake_gpu.h): claiming a slot (its liveness lock), the real time a
 * virtual time was reached, and the achieved time of every client. Shared by the fake library and
 * fake_gpu_tool. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <time.h>

#include "fake_gpu.h"

uint64_t fake_sim_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int lock_slot(int dev, int slot, short type) {
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
  fl.l_start = (off_t)(FAKE_GPU_LOCK_BASE + (uint64_t)dev * FAKE_GPU_CTXS + (uint64_t)slot);
  fl.l_len = 1;
  return fcntl(fake_sim_fd(), F_OFD_SETLK, &fl) == 0;
}

/* V of a slot nobody runs now (FAKE_SIM_AGAIN: it runs, or the slices moved on). */
static uint64_t idle_v(int dev, int slot) {
  uint64_t now = fake_sim_now(), h = fake_sim_catch_up(dev, now), start;
  uint32_t ch;
  if (h == FAKE_SIM_AGAIN || !fake_sim_slice(&fake_sim_file()->devs[dev], h, &ch, &start) || ch == (uint32_t)slot)
    return FAKE_SIM_AGAIN;
  return fake_sim_v(dev, slot, h, now);
}

/* Takes slot over for client: a dead owner's time is retired, its queued work dropped. */
static int take(int dev, int slot, uint32_t client) {
  struct fake_gpu_file* g = fake_sim_file();
  struct fake_gpu_ctx* x = &g->devs[dev].ctxs[slot];
  uint64_t v = idle_v(dev, slot);
  if (v == FAKE_SIM_AGAIN) return 0;
  uint32_t st = __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
  if ((st & 0xff) != FAKE_CTX_FREE && x->client < FAKE_GPU_CLIENTS && v > x->v_origin)
    __atomic_fetch_add(&g->clients[x->client].retired_ns, v - x->v_origin, __ATOMIC_SEQ_CST);
  x->client = client;
  x->v_origin = v;
  __atomic_store_n(&x->cmax, v, __ATOMIC_SEQ_CST);
  __atomic_store_n(&x->state, ((st >> 8) + 1) << 8 | FAKE_CTX_LIVE, __ATOMIC_RELEASE);
  fake_sim_own(dev, slot);
  return 1;
}

int fake_sim_claim(int dev, uint32_t client) {
  struct fake_gpu_dev* d = &fake_sim_file()->devs[dev];
  for (int slot = 0; slot < FAKE_GPU_CTXS - 1; slot++) {
    if (fake_sim_fd() < 0) {
      uint32_t free = FAKE_CTX_FREE;
      if (!__atomic_compare_exchange_n(&d->ctxs[slot].state, &free, 1u << 8 | FAKE_CTX_LIVE, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST))
        continue;
      d->ctxs[slot].client = client;
      fake_sim_own(dev, slot);
      return slot;
    }
    if (!lock_slot(dev, slot, F_WRLCK)) continue;
    if (take(dev, slot, client)) return slot;
    lock_slot(dev, slot, F_UNLCK);
  }
  return FAKE_GPU_CTXS - 2; /* all taken: shared with its owner, unowned here */
}

uint64_t fake_sim_when(int dev, int slot, uint64_t cv, uint64_t h, uint64_t now, uint64_t v_now) {
  const struct fake_gpu_dev* d = &fake_sim_file()->devs[dev];
  uint64_t v = v_now, end = now;
  for (uint64_t k = h; k + FAKE_GPU_SLICES > h; k--) {
    uint32_t c;
    uint64_t start;
    if (!fake_sim_slice(d, k, &c, &start)) break;
    if (c == (uint32_t)slot && end > start) {
      uint64_t from = v - (end - start); /* V at the slice's start */
      if (cv > from) return start + (cv - from);
      v = from;
    }
    end = start;
    if (k == 0) break;
  }
  return end;
}

static int achieved_at(uint64_t now, uint64_t* out) {
  struct fake_gpu_file* g = fake_sim_file();
  for (int c = 0; c < FAKE_GPU_CLIENTS; c++)
    out[c] = __atomic_load_n(&g->clients[c].retired_ns, __ATOMIC_ACQUIRE) +
             __atomic_load_n(&g->clients[c].sm_ns, __ATOMIC_ACQUIRE);
  for (int dev = 0; dev < FAKE_GPU_DEVICES; dev++) {
    if (__atomic_load_n(&g->devs[dev].state, __ATOMIC_ACQUIRE) != 2) continue;
    uint64_t h = fake_sim_catch_up(dev, now);
    if (h == FAKE_SIM_AGAIN) return 0;
    for (int slot = 0; slot < FAKE_GPU_CTXS; slot++) {
      const struct fake_gpu_ctx* x = &g->devs[dev].ctxs[slot];
      if ((__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) & 0xff) == FAKE_CTX_FREE) continue;
      uint64_t v = fake_sim_v(dev, slot, h, now);
      if (v == FAKE_SIM_AGAIN) return 0;
      if (x->client < FAKE_GPU_CLIENTS && v > x->v_origin) out[x->client] += v - x->v_origin;
    }
  }
  return 1;
}

uint64_t fake_sim_achieved(uint64_t* out) {
  for (;;) {
    uint64_t now = fake_sim_now();
    if (achieved_at(now, out)) return now;
  }
}
