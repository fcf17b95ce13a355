/* The demo's CUDA program: allocates device memory in fixed chunks until the driver refuses, says
 * what it got and why, then holds the memory until stdin closes (so `gpufrac status` can show it).
 * Linked with -lcuda: the real driver's libcuda.so.1 on a GPU node, the fake one elsewhere.
 * Usage: alloc_until_limit [chunk MiB, default 512] */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define MAX_CHUNKS 4096

static double gib(unsigned long long bytes) {
  return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

static const char* error_name(CUresult rc) {
  const char* name = NULL;
  if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || !name) return "unknown error";
  return name;
}

static int fail(const char* what, CUresult rc) {
  fprintf(stderr, "alloc_until_limit: %s failed: %s (%d)\n", what, error_name(rc), (int)rc);
  return 1;
}

int main(int argc, char** argv) {
  size_t chunk = (size_t)(argc > 1 ? strtoull(argv[1], NULL, 10) : 512) << 20;
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with the shim's stderr line */
  CUdevice dev;
  CUcontext ctx;
  CUresult rc;
  if ((rc = cuInit(0)) != CUDA_SUCCESS) return fail("cuInit", rc);
  if ((rc = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) return fail("cuDeviceGet", rc);
  if ((rc = cuCtxCreate(&ctx, 0, dev)) != CUDA_SUCCESS) return fail("cuCtxCreate", rc);
  size_t free_bytes = 0, total_bytes = 0;
  if ((rc = cuMemGetInfo(&free_bytes, &total_bytes)) != CUDA_SUCCESS) return fail("cuMemGetInfo", rc);
  printf("cuMemGetInfo: %.1f GiB free of %.1f GiB\n", gib(free_bytes), gib(total_bytes));
  static CUdeviceptr held[MAX_CHUNKS];
  int n = 0;
  while (n < MAX_CHUNKS && (rc = cuMemAlloc(&held[n], chunk)) == CUDA_SUCCESS) n++;
  printf("allocated %d x %zu MiB = %.1f GiB; the next cuMemAlloc of %zu MiB returned %s\n", n, chunk >> 20,
         gib((unsigned long long)n * chunk), chunk >> 20, rc == CUDA_SUCCESS ? "CUDA_SUCCESS" : error_name(rc));
  fflush(stdout);
  while (getchar() != EOF) {
  }
  for (int i = 0; i < n; i++) cuMemFree(held[i]);
  cuCtxDestroy(ctx);
  return 0;
}
