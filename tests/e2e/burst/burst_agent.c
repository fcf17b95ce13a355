/* A CUDA program the burstable-memory tests drive from the host, one command per line on its stdin
 * (a FIFO the test holds open), one answer per line on stdout, numbered from 1:
 *   a MIB    cuMemAlloc_v2 of MIB MiB, kept: "N ok" or "N oom <CUresult>"
 *   f        frees the latest allocation kept: "N freed MIB" (or "N none")
 *   i        cuMemGetInfo_v2: "N info <free MiB> <total MiB>"
 *   w MIB    cuMemAlloc_v2 of MIB MiB filled with a pattern (kept apart from a's; f frees none):
 *            "N ok" or "N oom <CUresult>"
 *   c        every byte of the w allocations read back: "N checked <MiB>" or "N bad <alloc> <offset>"
 *   x        exits: "N bye"
 * It starts with "0 ready <pid>" once its context is current. Linked with -lcuda (the fake
 * libcuda.so.1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#define MAX_HELD 4096

static CUdeviceptr g_ptr[MAX_HELD];
static unsigned long long g_mib[MAX_HELD];
static int g_held;
#define MAX_WRITTEN 64
static CUdeviceptr g_wptr[MAX_WRITTEN];
static size_t g_wbytes[MAX_WRITTEN];
static int g_written;

static unsigned char pattern(int alloc, size_t off) {
  return (unsigned char)(off * 131u + (unsigned)alloc * 17u + (off >> 12) + 1u);
}

/* w: an allocation filled with the pattern, through a host buffer. */
static void write_one(unsigned long long mib, char* out, size_t n) {
  size_t bytes = (size_t)(mib << 20);
  unsigned char* buf = malloc(bytes);
  CUresult rc =
      buf == NULL || g_written == MAX_WRITTEN ? CUDA_ERROR_OUT_OF_MEMORY : cuMemAlloc_v2(&g_wptr[g_written], bytes);
  if (rc == CUDA_SUCCESS) {
    for (size_t i = 0; i < bytes; i++) buf[i] = pattern(g_written, i);
    rc = cuMemcpyHtoD_v2(g_wptr[g_written], buf, bytes);
    if (rc == CUDA_SUCCESS) g_wbytes[g_written++] = bytes;
  }
  free(buf);
  snprintf(out, n, rc == CUDA_SUCCESS ? "ok" : "oom %d", (int)rc);
}

/* c: every byte of the w allocations compared with the pattern. */
static void check_all(char* out, size_t n) {
  size_t total = 0;
  for (int a = 0; a < g_written; a++) {
    unsigned char* buf = malloc(g_wbytes[a]);
    CUresult rc = buf == NULL ? CUDA_ERROR_OUT_OF_MEMORY : cuMemcpyDtoH_v2(buf, g_wptr[a], g_wbytes[a]);
    for (size_t i = 0; rc == CUDA_SUCCESS && i < g_wbytes[a]; i++)
      if (buf[i] != pattern(a, i)) {
        snprintf(out, n, "bad %d %zu", a, i);
        free(buf);
        return;
      }
    free(buf);
    if (rc != CUDA_SUCCESS) {
      snprintf(out, n, "copy-failed %d", (int)rc);
      return;
    }
    total += g_wbytes[a];
  }
  snprintf(out, n, "checked %zu", total >> 20);
}

static void answer(long n, const char* text) {
  printf("%ld %s\n", n, text);
  fflush(stdout);
}

static void run(long n, const char* line) {
  char out[128];
  unsigned long long mib = 0;
  if (sscanf(line, "a %llu", &mib) == 1 && g_held < MAX_HELD) {
    CUresult rc = cuMemAlloc_v2(&g_ptr[g_held], (size_t)(mib << 20));
    if (rc == CUDA_SUCCESS) g_mib[g_held++] = mib;
    snprintf(out, sizeof out, rc == CUDA_SUCCESS ? "ok" : "oom %d", (int)rc);
  } else if (line[0] == 'f') {
    if (g_held == 0) {
      snprintf(out, sizeof out, "none");
    } else {
      g_held--;
      CUresult rc = cuMemFree_v2(g_ptr[g_held]);
      if (rc == CUDA_SUCCESS) {
        snprintf(out, sizeof out, "freed %llu", g_mib[g_held]);
      } else {
        snprintf(out, sizeof out, "free-failed %d", (int)rc);
      }
    }
  } else if (sscanf(line, "w %llu", &mib) == 1) {
    write_one(mib, out, sizeof out);
  } else if (line[0] == 'c') {
    check_all(out, sizeof out);
  } else if (line[0] == 'i') {
    size_t free_b = 0, total = 0;
    CUresult rc = cuMemGetInfo_v2(&free_b, &total);
    snprintf(out, sizeof out, "info %zu %zu rc=%d", free_b >> 20, total >> 20, (int)rc);
  } else if (line[0] == 'x') {
    answer(n, "bye");
    exit(0);
  } else {
    snprintf(out, sizeof out, "bad command");
  }
  answer(n, out);
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuCtxCreate_v2(&ctx, 0, dev) != CUDA_SUCCESS) {
    answer(0, "no-cuda");
    return 1;
  }
  char ready[64];
  snprintf(ready, sizeof ready, "ready %d", (int)getpid());
  answer(0, ready);
  char line[256];
  for (long n = 1; fgets(line, sizeof line, stdin) != NULL; n++) run(n, line);
  return 0;
}
