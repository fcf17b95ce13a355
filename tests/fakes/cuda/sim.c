/* The time-slicing rules of the simulated GPU (fake_gpu.h): slices published once by 16-byte CAS,
 * run records kept by whoever catches up, liveness by OFD locks. Shared by the fake library and
 * fake_gpu_tool; no lock anywhere. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_gpu.h"

#define A_ACQ __ATOMIC_ACQUIRE
#define A_REL __ATOMIC_RELEASE
#define A_SEQ __ATOMIC_SEQ_CST
#define NO_V UINT64_MAX

typedef unsigned __int128 u128;

static struct fake_gpu_file* g_file;
/* Per device: the idle slice and arrivals count of the last scan that found no context with work. */
static __thread uint64_t t_idle_h[FAKE_GPU_DEVICES], t_idle_arrivals[FAKE_GPU_DEVICES];
static int g_fd = -1;
static int g_own[FAKE_GPU_DEVICES] = {-1, -1, -1, -1, -1, -1, -1, -1};

void fake_sim_bind(struct fake_gpu_file* g, int fd) {
  g_file = g;
  g_fd = fd;
}

void fake_sim_own(int dev, int slot) {
  g_own[dev] = slot;
}

static int cas16(void* p, uint64_t o0, uint64_t o1, uint64_t n0, uint64_t n1) {
  return __sync_bool_compare_and_swap((u128*)p, (u128)o1 << 64 | o0, (u128)n1 << 64 | n0);
}

/* Reads a 16-byte pair written only by cas16 whose first word never repeats a value. */
static void read_pair(const uint64_t* p, uint64_t* a, uint64_t* b) {
  for (;;) {
    *a = __atomic_load_n(&p[0], A_ACQ);
    *b = __atomic_load_n(&p[1], A_ACQ);
    if (__atomic_load_n(&p[0], A_SEQ) == *a) return;
  }
}

uint64_t fake_sim_parse_timeslice(const char* text) {
  static const struct {
    const char* name;
    uint64_t ns;
  } kLevels[] = {{"default", FAKE_GPU_TIMESLICE_DEFAULT}, {"short", 2000000}, {"medium", 10000000}, {"long", 30000000}};
  for (size_t i = 0; i < sizeof kLevels / sizeof kLevels[0]; i++)
    if (strcasecmp(text, kLevels[i].name) == 0) return kLevels[i].ns;
  char* end = NULL;
  unsigned long long n = strtoull(text, &end, 10);
  if (end == text || text[0] == '-') return 0;
  uint64_t unit = strcmp(end, "ns") == 0 ? 1 : strcmp(end, "us") == 0 ? 1000 : strcmp(end, "ms") == 0 ? 1000000 : 0;
  uint64_t ns = n * unit;
  return ns >= 1000 && ns <= 1000000000ull ? ns : 0;
}

void fake_sim_init_header(struct fake_gpu_file* g, uint64_t timeslice_ns) {
  uint32_t zero = 0;
  uint64_t zero64 = 0;
  __atomic_compare_exchange_n(&g->size, &zero, (uint32_t)sizeof *g, 0, A_SEQ, A_SEQ);
  __atomic_compare_exchange_n(&g->timeslice_ns, &zero64, timeslice_ns, 0, A_SEQ, A_SEQ);
  zero = 0;
  __atomic_compare_exchange_n(&g->version, &zero, FAKE_GPU_VERSION, 0, A_SEQ, A_SEQ);
  zero = 0;
  __atomic_compare_exchange_n(&g->magic, &zero, FAKE_GPU_MAGIC, 0, A_SEQ, A_SEQ);
}

/* Slice 0 is idle from time 0; every context has run for 0 ns (closed at slice 0). */
void fake_sim_dev_init(struct fake_gpu_dev* d) {
  d->slices[0].start = 0;
  __atomic_store_n(&d->slices[0].seq, (1ull << 8) | FAKE_GPU_IDLE, A_REL);
  for (int i = 0; i < FAKE_GPU_CTXS; i++) {
    d->ctxs[i].run.v = 0;
    __atomic_store_n(&d->ctxs[i].run.slice, 1, A_REL);
  }
}

int fake_sim_slice(const struct fake_gpu_dev* d, uint64_t k, uint32_t* ctx, uint64_t* start) {
  uint64_t seq, st;
  read_pair(&d->slices[k % FAKE_GPU_SLICES].seq, &seq, &st);
  if ((seq >> 8) != k + 1) return 0;
  *ctx = (uint32_t)(seq & 0xff);
  *start = st;
  return 1;
}

static uint64_t newest(struct fake_gpu_dev* d) {
  uint64_t h = __atomic_load_n(&d->head, A_ACQ), h0 = h, s;
  uint32_t c;
  while (fake_sim_slice(d, h + 1, &c, &s)) h++;
  if (h != h0) {
    uint64_t cur = h0;
    while (cur < h && !__atomic_compare_exchange_n(&d->head, &cur, h, 1, A_SEQ, A_SEQ)) {
    }
  }
  return h;
}

/* Closes x's record if it is open at slice k (k + 1 published at s1). */
static void close_rec(struct fake_gpu_ctx* x, uint64_t k, uint64_t s0, uint64_t s1) {
  uint64_t sl, v;
  read_pair(&x->run.slice, &sl, &v);
  if (sl == k << 1) cas16(&x->run, sl, v, k << 1 | 1, v + (s1 - s0));
}

/* x's V when it is not running in slice h (NO_V when its record moved past h meanwhile). */
static uint64_t frozen_v(struct fake_gpu_dev* d, struct fake_gpu_ctx* x, uint64_t h) {
  for (int tries = 0; tries < 4; tries++) {
    uint64_t sl, v, s0, s1;
    uint32_t c;
    read_pair(&x->run.slice, &sl, &v);
    if ((sl >> 1) > h) return NO_V;
    if (sl & 1) return v;
    if ((sl >> 1) == h || !fake_sim_slice(d, (sl >> 1) + 1, &c, &s1) || !fake_sim_slice(d, sl >> 1, &c, &s0))
      return NO_V;
    close_rec(x, sl >> 1, s0, s1);
  }
  return NO_V;
}

/* Records of the contexts of slices h - 1 (closed) and h (open at h). */
static void bookkeep(struct fake_gpu_dev* d, uint64_t h, uint32_t ch, uint64_t sh) {
  uint32_t cp;
  uint64_t sp, sl, v;
  if (h > 0 && fake_sim_slice(d, h - 1, &cp, &sp) && cp != FAKE_GPU_IDLE && cp != ch)
    close_rec(&d->ctxs[cp], h - 1, sp, sh);
  if (ch == FAKE_GPU_IDLE) return;
  struct fake_gpu_ctx* x = &d->ctxs[ch];
  for (int tries = 0; tries < 4; tries++) {
    read_pair(&x->run.slice, &sl, &v);
    if ((sl >> 1) >= h) return;
    if (sl & 1)
      cas16(&x->run, sl, v, h << 1, v);
    else
      frozen_v(d, x, h); /* open at an earlier slice: closed first */
  }
}

static int alive(int dev, int slot) {
  if (g_fd < 0 || g_own[dev] == slot || slot == FAKE_GPU_MPS_SLOT) return 1; /* the server lives on */
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  fl.l_start = (off_t)(FAKE_GPU_LOCK_BASE + (uint64_t)dev * FAKE_GPU_CTXS + (uint64_t)slot);
  fl.l_len = 1;
  if (fcntl(g_fd, F_OFD_GETLK, &fl) != 0) return 1;
  return fl.l_type != F_UNLCK;
}

/* x has work at the end of slice h (not its context) and a live owner; a dead one is marked. */
static int ready(int dev, uint32_t x, uint64_t h) {
  struct fake_gpu_ctx* c = &g_file->devs[dev].ctxs[x];
  uint32_t st = __atomic_load_n(&c->state, A_ACQ);
  if ((st & 0xff) != FAKE_CTX_LIVE) return 0;
  uint64_t v = frozen_v(&g_file->devs[dev], c, h);
  if (v == NO_V || __atomic_load_n(&c->cmax, A_ACQ) <= v) return 0;
  if (alive(dev, (int)x)) return 1;
  __atomic_compare_exchange_n(&c->state, &st, (st & ~0xffu) | FAKE_CTX_DEAD, 0, A_SEQ, A_SEQ);
  return 0;
}

/* When slice h of ch (started at sh) ends if nobody else matters: its remaining work, at most a
 * timeslice (*more: work is left after it). 0: the records moved on, look again. */
static uint64_t running_end(struct fake_gpu_dev* d, uint32_t ch, uint64_t h, uint64_t sh, int* more) {
  uint64_t sl, v0, ts = g_file->timeslice_ns;
  read_pair(&d->ctxs[ch].run.slice, &sl, &v0);
  if (sl != h << 1) return 0;
  uint64_t cm = __atomic_load_n(&d->ctxs[ch].cmax, A_ACQ), rem = cm > v0 ? cm - v0 : 0;
  *more = rem > ts;
  return sh + (rem < ts ? rem : ts);
}

/* The end of slice h as things stand, and in *next the context of the slice after it when that
 * end is at or before t (the liveness of candidates is asked only then). */
static uint64_t decide(int dev, uint64_t h, uint32_t ch, uint64_t sh, uint64_t t, uint32_t* next) {
  struct fake_gpu_dev* d = &g_file->devs[dev];
  *next = FAKE_GPU_IDLE;
  if (ch == FAKE_GPU_IDLE) {
    uint64_t end = UINT64_MAX, arrivals = __atomic_load_n(&d->arrivals, A_SEQ);
    if (t_idle_h[dev] == h + 1 && t_idle_arrivals[dev] == arrivals) return end; /* nothing arrived since */
    for (uint32_t x = 0; x < FAKE_GPU_CTXS; x++) {
      uint64_t at = __atomic_load_n(&d->ctxs[x].arrive, A_ACQ);
      if (at < sh) at = sh;
      if (at < end && ready(dev, x, h)) end = at, *next = x;
    }
    if (end == UINT64_MAX) t_idle_h[dev] = h + 1, t_idle_arrivals[dev] = arrivals;
    return end;
  }
  int more = 0;
  uint64_t end = running_end(d, ch, h, sh, &more);
  if (end == 0 || end > t) return end;
  for (uint32_t i = 1; i < FAKE_GPU_CTXS; i++) {
    if (ready(dev, (ch + i) % FAKE_GPU_CTXS, h)) return *next = (ch + i) % FAKE_GPU_CTXS, end;
  }
  if (more) *next = ch;
  return end;
}

uint64_t fake_sim_end(int dev, uint64_t h) {
  struct fake_gpu_dev* d = &g_file->devs[dev];
  uint32_t ch, next;
  uint64_t sh;
  int more;
  if (!fake_sim_slice(d, h, &ch, &sh)) return 0;
  return ch == FAKE_GPU_IDLE ? decide(dev, h, ch, sh, UINT64_MAX, &next) : running_end(d, ch, h, sh, &more);
}

static void publish(struct fake_gpu_dev* d, uint64_t k, uint32_t ctx, uint64_t start) {
  uint64_t seq, st;
  struct fake_gpu_slice* s = &d->slices[k % FAKE_GPU_SLICES];
  read_pair(&s->seq, &seq, &st);
  if ((seq >> 8) < k + 1) cas16(s, seq, st, (k + 1) << 8 | ctx, start);
}

uint64_t fake_sim_catch_up(int dev, uint64_t t) {
  struct fake_gpu_dev* d = &g_file->devs[dev];
  for (;;) {
    uint64_t h = newest(d), sh;
    uint32_t ch, next;
    if (!fake_sim_slice(d, h, &ch, &sh)) continue;
    if (sh > t) return FAKE_SIM_AGAIN; /* published by a later clock: t is past, ask with a new one */
    bookkeep(d, h, ch, sh);
    uint64_t end = decide(dev, h, ch, sh, t, &next);
    if (end == 0) continue;
    if (end > t) return h;
    publish(d, h + 1, next, end);
  }
}

uint64_t fake_sim_v(int dev, int slot, uint64_t h, uint64_t t) {
  struct fake_gpu_dev* d = &g_file->devs[dev];
  uint32_t ch, c;
  uint64_t sh, sl, v, s1;
  if (!fake_sim_slice(d, h, &ch, &sh)) return NO_V;
  if (ch != (uint32_t)slot) return frozen_v(d, &d->ctxs[slot], h);
  bookkeep(d, h, ch, sh);
  read_pair(&d->ctxs[slot].run.slice, &sl, &v);
  uint64_t ran = t > sh ? t - sh : 0;
  if (sl == h << 1) return v + ran;
  if (sl != (h << 1 | 1) || !fake_sim_slice(d, h + 1, &c, &s1)) return NO_V;
  return v - (s1 - sh) + (ran < s1 - sh ? ran : s1 - sh); /* closed meanwhile, at s1 > t */
}

struct fake_gpu_file* fake_sim_file(void) {
  return g_file;
}

int fake_sim_fd(void) {
  return g_fd;
}
