/* Modules, kernels and launches. A module has no code: any function name resolves, and the name
 * gives the kernel's duration on the simulated GPU: sleep_<N>ns, sleep_<N>us or sleep_<N>ms runs
 * for N of that unit, any other name takes no time; a _w<P> suffix (1 to 100) is its width, the
 * percent of the GPU's SMs it needs (100 without one; it matters to MPS clients, fake_gpu.h).
 * Every launch form (plain, Ex, cooperative, cooperative on several devices, and their _ptsz
 * variants) queues the kernel on its stream; with CUDA_LAUNCH_BLOCKING=1 it returns only once the
 * kernel has run, as NVIDIA's driver does (the GPU time is then spent inside the call). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "mps.h"

#undef cuLaunchKernel
#undef cuLaunchKernelEx
#undef cuLaunchCooperativeKernel

struct fake_function {
  uint32_t magic; /* FAKE_FUNCTION_MAGIC while its module is loaded */
  unsigned width; /* percent of the SMs */
  uint64_t duration;
};
#define FAKE_FUNCTION_MAGIC 0x434e5546u
#define FAKE_MODULE_MAGIC 0x4c444f4du
#define FAKE_MODULE_FUNCTIONS 64

struct fake_module {
  uint32_t magic;
  unsigned count;
  char names[FAKE_MODULE_FUNCTIONS][64];
  struct fake_function functions[FAKE_MODULE_FUNCTIONS];
};

#define BLOCKING_ENV "CUDA_LAUNCH_BLOCKING"
int fake_launch_blocking;

int fake_launch_blocking_config(void) {
  const char* v = getenv(BLOCKING_ENV);
  if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0) return fake_launch_blocking = 0, 0;
  if (strcmp(v, "1") == 0) return fake_launch_blocking = 1, 0;
  fprintf(stderr, "fake libcuda: %s: bad value \"%s\"; accepted: 1 (launches return when their kernel ran) or 0\n",
          BLOCKING_ENV, v);
  return -1;
}

static CUresult load(CUmodule* module) {
  CUdevice dev;
  CUresult rc = fake_current_device(&dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (module == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fake_module* m = calloc(1, sizeof *m);
  if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  m->magic = FAKE_MODULE_MAGIC;
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  return fname == NULL ? CUDA_ERROR_INVALID_VALUE : load(module);
}
FAKE_API CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return image == NULL ? CUDA_ERROR_INVALID_VALUE : load(module);
}

FAKE_API CUresult cuModuleUnload(CUmodule module) {
  struct fake_module* m = (struct fake_module*)module;
  if (m == NULL || m->magic != FAKE_MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  m->magic = 0;
  for (unsigned i = 0; i < m->count; i++) m->functions[i].magic = 0;
  free(m);
  return CUDA_SUCCESS;
}

/* sleep_<N>(ns|us|ms)[_w<P>] -> N in ns and P in *width; anything else 0 (width 100). */
static uint64_t duration_of(const char* name, unsigned* width) {
  *width = 100;
  if (strncmp(name, "sleep_", 6) != 0) return 0;
  char* end = NULL;
  unsigned long long n = strtoull(name + 6, &end, 10);
  if (end == name + 6 || strlen(end) < 2) return 0;
  uint64_t unit = strncmp(end, "ns", 2) == 0   ? 1
                  : strncmp(end, "us", 2) == 0 ? 1000
                  : strncmp(end, "ms", 2) == 0 ? 1000000
                                               : 0;
  const char* rest = end + 2;
  if (strncmp(rest, "_w", 2) == 0) {
    char* w_end = NULL;
    unsigned long w = strtoul(rest + 2, &w_end, 10);
    if (w_end == rest + 2 || *w_end != '\0' || w < 1 || w > 100) return 0;
    *width = (unsigned)w;
  } else if (*rest != '\0') {
    return 0;
  }
  return n * unit;
}

FAKE_API CUresult cuModuleGetFunction(CUfunction* func, CUmodule module, const char* name) {
  struct fake_module* m = (struct fake_module*)module;
  if (func == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (m == NULL || m->magic != FAKE_MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  for (unsigned i = 0; i < m->count; i++) {
    if (strncmp(m->names[i], name, sizeof m->names[i]) == 0) return *func = (CUfunction)&m->functions[i], CUDA_SUCCESS;
  }
  if (m->count == FAKE_MODULE_FUNCTIONS || strlen(name) >= sizeof m->names[0]) return CUDA_ERROR_NOT_FOUND;
  unsigned i = m->count++;
  strcpy(m->names[i], name);
  unsigned width;
  uint64_t duration = duration_of(name, &width);
  m->functions[i] = (struct fake_function){FAKE_FUNCTION_MAGIC, duration != 0 ? width : 100, duration};
  *func = (CUfunction)&m->functions[i];
  return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, CUstream stream, int per_thread) {
  struct fake_function* fn = (struct fake_function*)f;
  if (fn == NULL || fn->magic != FAKE_FUNCTION_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0) return CUDA_ERROR_INVALID_VALUE;
  struct fake_stream* s;
  CUresult rc = fake_mps_launch(); /* mps.h: a faulted MPS server's sticky error */
  if (rc == CUDA_SUCCESS) rc = fake_stream_of(stream, per_thread, &s);
  return rc != CUDA_SUCCESS ? rc : fake_stream_enqueue(s, fn->duration, fn->width, 1);
}

FAKE_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shmem, CUstream stream, void** params, void** extra) {
  (void)bx, (void)by, (void)bz, (void)shmem, (void)params, (void)extra;
  return launch(f, gx, gy, gz, stream, 0);
}
FAKE_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                      unsigned bz, unsigned shmem, CUstream stream, void** params, void** extra) {
  (void)bx, (void)by, (void)bz, (void)shmem, (void)params, (void)extra;
  return launch(f, gx, gy, gz, stream, 1);
}

static CUresult launch_ex(const CUlaunchConfig* c, CUfunction f, int per_thread) {
  if (c == NULL) return CUDA_ERROR_INVALID_VALUE;
  return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->hStream, per_thread);
}
FAKE_API CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  (void)params, (void)extra;
  return launch_ex(config, f, 0);
}
FAKE_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  (void)params, (void)extra;
  return launch_ex(config, f, 1);
}

FAKE_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                            unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params) {
  (void)bx, (void)by, (void)bz, (void)shmem, (void)params;
  return launch(f, gx, gy, gz, stream, 0);
}
FAKE_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                 unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                                 void** params) {
  (void)bx, (void)by, (void)bz, (void)shmem, (void)params;
  return launch(f, gx, gy, gz, stream, 1);
}

/* One kernel per entry, each on its own (non-NULL) stream. */
FAKE_API CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list, unsigned n, unsigned flags) {
  (void)flags;
  if (list == NULL || n == 0) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    if (list[i].hStream == NULL) return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned i = 0; i < n; i++) {
    const CUDA_LAUNCH_PARAMS* p = &list[i];
    CUresult rc = launch(p->function, p->gridDimX, p->gridDimY, p->gridDimZ, p->hStream, 0);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}
