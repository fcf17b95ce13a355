/* The allocation registry: address-space bookkeeping only, no memory behind a fake device
 * pointer, so GiB-sized allocations cost nothing. Fake addresses are 512-byte aligned, distinct
 * per device, and a freed block of the same size is handed out again (as a real allocator does). */
#include <pthread.h>
#include <stdlib.h>

#include "ckpt.h"
#include "drvlimit.h"
#include "fake_cuda.h"
#include "mps.h"

#define FAKE_ALIGN 512
#define FAKE_FREE_LIST 256
#define FAKE_TOMB 1ull

struct entry {
  uint64_t key; /* kind << 60 | value; 0 empty, 1 tombstone */
  uint64_t size;
  int dev;
};

struct block {
  uint64_t addr, size;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry* g_tab;
static size_t g_cap, g_fill; /* g_fill counts entries and tombstones */
static uint64_t g_next_addr[FAKE_MAX_DEVICES + 1];
static uint64_t g_next_id = 0x1000;
static struct block g_free[FAKE_MAX_DEVICES + 1][FAKE_FREE_LIST];
static int g_nfree[FAKE_MAX_DEVICES + 1];

static size_t home(uint64_t key, size_t cap) {
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static struct entry* find(uint64_t key) {
  if (g_cap == 0) return NULL;
  for (size_t i = home(key, g_cap);; i = (i + 1) & (g_cap - 1)) {
    if (g_tab[i].key == key) return &g_tab[i];
    if (g_tab[i].key == 0) return NULL;
  }
}

/* Rehashes without tombstones, at twice the live entries' need (so alloc/free loops stay small). */
static int grow(void) {
  size_t live = 0, cap = 1024;
  for (size_t i = 0; i < g_cap; i++) live += g_tab[i].key > FAKE_TOMB;
  while (cap < (live + 1) * 4) cap *= 2;
  struct entry* tab = calloc(cap, sizeof *tab);
  if (tab == NULL) return -1;
  for (size_t i = 0; i < g_cap; i++) {
    if (g_tab[i].key <= FAKE_TOMB) continue;
    size_t j = home(g_tab[i].key, cap);
    while (tab[j].key != 0) j = (j + 1) & (cap - 1);
    tab[j] = g_tab[i];
  }
  free(g_tab);
  g_tab = tab;
  g_cap = cap;
  g_fill = 0;
  for (size_t i = 0; i < cap; i++) g_fill += tab[i].key != 0;
  return 0;
}

static int insert(uint64_t key, uint64_t size, int dev) {
  if ((g_fill + 1) * 2 > g_cap && grow() != 0) return -1;
  size_t i = home(key, g_cap);
  while (g_tab[i].key > FAKE_TOMB) i = (i + 1) & (g_cap - 1);
  if (g_tab[i].key == 0) g_fill++;
  g_tab[i] = (struct entry){key, size, dev};
  return 0;
}

/* A fake device address for size bytes on dev (index dev + 1; dev -1 is host memory). */
static uint64_t fake_address(int dev, uint64_t size) {
  int d = dev + 1;
  uint64_t rounded = (size + FAKE_ALIGN - 1) / FAKE_ALIGN * FAKE_ALIGN;
  for (int i = g_nfree[d] - 1; i >= 0; i--) {
    if (g_free[d][i].size != rounded) continue;
    uint64_t addr = g_free[d][i].addr;
    g_free[d][i] = g_free[d][--g_nfree[d]];
    return addr;
  }
  if (g_next_addr[d] == 0) g_next_addr[d] = (uint64_t)(d + 1) << 40;
  uint64_t addr = g_next_addr[d];
  g_next_addr[d] += rounded;
  return addr;
}

CUresult fake_mem_alloc(enum fake_kind kind, CUdevice dev, uint64_t size, uint64_t* key) {
  if (size == 0 || key == NULL) return CUDA_ERROR_INVALID_VALUE;
  const int gate = fake_ckpt_enter(); /* ckpt.h: no allocation while locked */
  pthread_mutex_lock(&g_lock);
  CUresult rc = CUDA_SUCCESS;
  if (dev >= 0 && size > fake_devices[dev].total - fake_devices[dev].used) {
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  } else if (dev >= 0 && fake_mps_charge(dev, fake_devices[dev].used, size) != CUDA_SUCCESS) {
    rc = CUDA_ERROR_OUT_OF_MEMORY; /* the MPS server's pinned limit (mps.h) */
  } else if (dev >= 0 && fake_limit_charge(dev, fake_devices[dev].used, size) != CUDA_SUCCESS) {
    rc = CUDA_ERROR_OUT_OF_MEMORY; /* the cgroup's driver limit (drvlimit.h) */
  } else {
    uint64_t value = kind == FAKE_PTR ? fake_address(dev, size) : (g_next_id++) << 4;
    if (insert((uint64_t)kind << 60 | value, size, dev) != 0) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      if (dev >= 0) fake_devices[dev].used += size;
      *key = value;
    }
  }
  pthread_mutex_unlock(&g_lock);
  fake_ckpt_leave(gate);
  return rc;
}

CUresult fake_mem_free(enum fake_kind kind, uint64_t key) {
  const int gate = fake_ckpt_enter();
  pthread_mutex_lock(&g_lock);
  struct entry* e = find((uint64_t)kind << 60 | key);
  CUresult rc = e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (e != NULL) {
    int d = e->dev + 1;
    if (e->dev >= 0) fake_devices[e->dev].used -= e->size;
    if (e->dev >= 0) fake_limit_release(e->dev, fake_devices[e->dev].used);
    if (kind == FAKE_PTR && g_nfree[d] < FAKE_FREE_LIST) {
      g_free[d][g_nfree[d]++] = (struct block){key, (e->size + FAKE_ALIGN - 1) / FAKE_ALIGN * FAKE_ALIGN};
    }
    e->key = FAKE_TOMB;
  }
  pthread_mutex_unlock(&g_lock);
  if (rc == CUDA_SUCCESS && kind == FAKE_PTR) fake_contents_drop(key);
  fake_ckpt_leave(gate);
  return rc;
}

uint64_t fake_mem_used(CUdevice dev) {
  pthread_mutex_lock(&g_lock);
  uint64_t used = fake_devices[dev].used;
  pthread_mutex_unlock(&g_lock);
  return used;
}

CUresult fake_mem_range(uint64_t addr, uint64_t len, uint64_t* base, uint64_t* size) {
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_cap && rc != CUDA_SUCCESS; i++) {
    const uint64_t k = g_tab[i].key;
    if (k <= FAKE_TOMB || k >> 60 != FAKE_PTR) continue;
    const uint64_t b = k & ((1ull << 60) - 1);
    if (addr >= b && addr - b < g_tab[i].size && len <= g_tab[i].size - (addr - b)) {
      *base = b, *size = g_tab[i].size, rc = CUDA_SUCCESS;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}
