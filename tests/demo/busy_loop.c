/* The demo's busy GPU program for compute shares: launches 500 us kernels on its own stream, never
 * waiting, for SECONDS, then waits for them. On the simulated GPU of the fake libcuda.so.1 the kernel
 * named sleep_500us takes 500 us of the GPU's time (tests/fakes/cuda/README.md); a real driver has
 * no such module, and the program says so.
 * Usage: busy_loop SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 10;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUmodule mod;
  CUfunction fn;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&dev, 0);
  if (rc == CUDA_SUCCESS) rc = cuCtxCreate(&ctx, 0, dev);
  if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = cuModuleLoadData(&mod, "fake");
  if (rc == CUDA_SUCCESS) rc = cuModuleGetFunction(&fn, mod, "sleep_500us");
  unsigned long long n = 0;
  for (double end = now_s() + seconds; rc == CUDA_SUCCESS && now_s() < end; n++)
    rc = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
  if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
  printf("busy_loop: %llu kernels of 500 us in %.0f s, rc=%d\n", n, seconds, (int)rc);
  return rc != CUDA_SUCCESS;
}
