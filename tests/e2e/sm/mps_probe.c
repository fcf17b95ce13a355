/* An MPS client for the SM-sharing tests, over the fake libcuda (or, as mps_probe_static, linked
 * into a static binary that no preloaded shim can enter):
 *   mps_probe [alloc <MiB chunk>] [launch|sync <count> <kernel>] [hold <seconds>] [mark <file>] [wait <file>]
 * prints each step's CUDA result on one line, e.g. "cuInit: CUDA_SUCCESS",
 * "alloc: 8 x 512 MiB = 4096 MiB, then CUDA_ERROR_OUT_OF_MEMORY", "launch: 3 ok, then
 * CUDA_ERROR_ILLEGAL_ADDRESS", and the environment the container gave it; mark creates a file and
 * wait polls for one (up to 60 s), so a test can line up clients; sync waits for each kernel before
 * the next. Exit 0 once the steps
 * ran (whatever CUDA answered), 1 when cuInit or the context failed, 2 on a usage error. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* name_of(CUresult rc) {
  const char* s = NULL;
  return cuGetErrorName(rc, &s) == CUDA_SUCCESS && s ? s : "CUDA_ERROR_?";
}

static void alloc_until_failure(unsigned long mib) {
  CUdeviceptr p;
  unsigned long n = 0;
  CUresult rc;
  while ((rc = cuMemAlloc(&p, mib << 20)) == CUDA_SUCCESS && n < 100000) n++;
  printf("alloc: %lu x %lu MiB = %lu MiB, then %s\n", n, mib, n * mib, name_of(rc));
}

/* sync: each kernel waited for before the next (an inference loop's shape). */
static void launch_loop(long count, const char* kernel, int sync) {
  CUmodule mod;
  CUfunction fn;
  CUresult rc = cuModuleLoadData(&mod, "fake");
  if (rc == CUDA_SUCCESS) rc = cuModuleGetFunction(&fn, mod, kernel);
  long ok = 0;
  while (rc == CUDA_SUCCESS && ok < count) {
    rc = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    if (rc == CUDA_SUCCESS && sync) rc = cuCtxSynchronize();
    if (rc == CUDA_SUCCESS) ok++;
  }
  if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
  printf("launch: %ld ok, then %s\n", ok, rc == CUDA_SUCCESS ? "done" : name_of(rc));
}

int main(int argc, char** argv) {
  const char* vars[] = {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    printf("%s=%s\n", vars[i], getenv(vars[i]) ? getenv(vars[i]) : "");
  CUresult rc = cuInit(0);
  printf("cuInit: %s\n", name_of(rc));
  CUdevice dev;
  CUcontext ctx;
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&dev, 0);
  if (rc == CUDA_SUCCESS) {
    rc = cuCtxCreate(&ctx, 0, dev);
    printf("context: %s\n", name_of(rc));
  }
  fflush(stdout);
  if (rc != CUDA_SUCCESS) return 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "alloc") == 0 && i + 1 < argc) {
      alloc_until_failure(strtoul(argv[++i], NULL, 10));
    } else if ((strcmp(argv[i], "launch") == 0 || strcmp(argv[i], "sync") == 0) && i + 2 < argc) {
      long count = atol(argv[i + 1]);
      launch_loop(count, argv[i + 2], strcmp(argv[i], "sync") == 0);
      i += 2;
    } else if (strcmp(argv[i], "mark") == 0 && i + 1 < argc) {
      FILE* f = fopen(argv[++i], "w");
      if (f != NULL) fclose(f);
    } else if (strcmp(argv[i], "wait") == 0 && i + 1 < argc) {
      const char* path = argv[++i];
      for (int n = 0; n < 6000 && access(path, F_OK) != 0; n++) usleep(10000);
    } else if (strcmp(argv[i], "hold") == 0 && i + 1 < argc) {
      fflush(stdout);
      sleep((unsigned)atoi(argv[++i]));
    } else {
      fprintf(stderr,
              "usage: mps_probe [alloc <MiB>] [launch|sync <count> <kernel>] [hold <seconds>] [mark <file>] "
              "[wait <file>]\n");
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}
