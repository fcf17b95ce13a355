/* Device memory's contents (README.md "Memory"): an allocation gets pages behind it at its first
 * write (an anonymous mapping, so untouched pages cost nothing and GiB-sized allocations that are
 * never written cost nothing at all). A checkpoint copies each into a host copy and unmaps it, as
 * the driver moves device memory into host memory of the process; a restore maps it again at the
 * same fake address and copies it back. cuMemcpyHtoD/DtoH and cuMemsetD8 are the only ways in. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ckpt.h"
#include "fake_cuda.h"

struct backing {
  uint64_t base, size;
  unsigned char* dev;  /* the "device" pages; NULL while checkpointed */
  unsigned char* host; /* the host copy while checkpointed */
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct backing* g_b;
static size_t g_n, g_cap;

static unsigned char* map_pages(uint64_t size) {
  void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* The backing of the allocation at base (made when create), or NULL. Under g_mu. */
static struct backing* backing_of(uint64_t base, uint64_t size, int create) {
  for (size_t i = 0; i < g_n; i++)
    if (g_b[i].base == base) return &g_b[i];
  if (!create) return NULL;
  if (g_n == g_cap) {
    size_t cap = g_cap ? 2 * g_cap : 64;
    struct backing* b = realloc(g_b, cap * sizeof *b);
    if (b == NULL) return NULL;
    g_b = b, g_cap = cap;
  }
  unsigned char* dev = map_pages(size);
  if (dev == NULL) return NULL;
  g_b[g_n] = (struct backing){base, size, dev, NULL};
  return &g_b[g_n++];
}

void fake_contents_drop(uint64_t base) {
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n; i++) {
    if (g_b[i].base != base) continue;
    if (g_b[i].dev != NULL) munmap(g_b[i].dev, g_b[i].size);
    free(g_b[i].host);
    g_b[i] = g_b[--g_n];
    break;
  }
  pthread_mutex_unlock(&g_mu);
}

CUresult fake_contents_out(void) {
  pthread_mutex_lock(&g_mu);
  size_t i = 0;
  for (; i < g_n; i++) {
    g_b[i].host = malloc(g_b[i].size);
    if (g_b[i].host == NULL) break;
    memcpy(g_b[i].host, g_b[i].dev, g_b[i].size);
  }
  if (i < g_n) { /* host memory refused: nothing moves */
    while (i-- > 0) free(g_b[i].host), g_b[i].host = NULL;
    pthread_mutex_unlock(&g_mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (i = 0; i < g_n; i++) munmap(g_b[i].dev, g_b[i].size), g_b[i].dev = NULL;
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}

CUresult fake_contents_in(void) {
  pthread_mutex_lock(&g_mu);
  size_t i = 0;
  for (; i < g_n; i++)
    if ((g_b[i].dev = map_pages(g_b[i].size)) == NULL) break;
  if (i < g_n) {
    while (i-- > 0) munmap(g_b[i].dev, g_b[i].size), g_b[i].dev = NULL;
    pthread_mutex_unlock(&g_mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (i = 0; i < g_n; i++) {
    memcpy(g_b[i].dev, g_b[i].host, g_b[i].size);
    free(g_b[i].host), g_b[i].host = NULL;
  }
  pthread_mutex_unlock(&g_mu);
  return CUDA_SUCCESS;
}

/* The pages behind [dptr, dptr + n) (made on a write), through *out; NULL pages on a read of an
 * allocation never written (it reads as zeros). */
static CUresult pages(CUdeviceptr dptr, size_t n, int write, unsigned char** out) {
  uint64_t base, size;
  CUresult rc = fake_mem_range(dptr, n, &base, &size);
  if (rc != CUDA_SUCCESS) return rc;
  struct backing* b = backing_of(base, size, write);
  if (b == NULL && write) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = b != NULL ? b->dev + (dptr - base) : NULL;
  return CUDA_SUCCESS;
}

/* One copy or set through the gate (ckpt.h): fill with src, or with byte value when src is NULL;
 * to_host copies the other way. */
static CUresult transfer(CUdeviceptr dptr, void* host, const void* src, int value, size_t n, int to_host) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  if ((to_host && host == NULL) || (!to_host && src == NULL && value < 0)) return CUDA_ERROR_INVALID_VALUE;
  if (n == 0) return CUDA_SUCCESS;
  const int gate = fake_ckpt_enter();
  pthread_mutex_lock(&g_mu);
  unsigned char* p = NULL;
  rc = pages(dptr, n, !to_host, &p);
  if (rc == CUDA_SUCCESS && to_host && p != NULL) memcpy(host, p, n);
  if (rc == CUDA_SUCCESS && to_host && p == NULL) memset(host, 0, n);
  if (rc == CUDA_SUCCESS && !to_host && src != NULL) memcpy(p, src, n);
  if (rc == CUDA_SUCCESS && !to_host && src == NULL) memset(p, value, n);
  pthread_mutex_unlock(&g_mu);
  fake_ckpt_leave(gate);
  return rc;
}

FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return src == NULL ? CUDA_ERROR_INVALID_VALUE : transfer(dst, NULL, src, -1, n, 0);
}

FAKE_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return transfer(src, dst, NULL, -1, n, 1);
}

FAKE_API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  return transfer(dst, NULL, NULL, value, n, 0);
}
