/* A CUDA program the burstable-memory tests drive from the host, one command per line on its stdin
 * (a FIFO the test holds open), one answer per line on stdout, numbered from 1:
 *   a MIB    cuMemAlloc_v2 of MIB MiB, kept: "N ok" or "N oom <CUresult>"
 *   f        frees the latest allocation kept: "N freed MIB" (or "N none")
 *   i        cuMemGetInfo_v2: "N info <free MiB> <total MiB>"
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
