/* Finds the driver only through dlopen("libcuda.so.1") + dlsym, as ctypes, JAX or NCCL do (not
 * linked with -lcuda). Prints where the symbols came from, then fills device 0 with CHUNK-byte
 * cuMemAlloc_v2 allocations until refused: "fill each=CHUNK ok=N rc=R". */
#include <stdint.h>
#include <stdlib.h>

#include "shim_origin.h"

typedef int (*init_fn)(unsigned);
typedef int (*devget_fn)(int*, int);
typedef int (*ctx_fn)(void**, unsigned, int);
typedef int (*alloc_fn)(unsigned long long*, size_t);
typedef int (*meminfo_fn)(size_t*, size_t*);

int main(int argc, char** argv) {
  size_t chunk = argc > 1 ? strtoull(argv[1], NULL, 0) : 1u << 20;
  char b1[256], b2[256], b3[256];
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return fprintf(stderr, "shim_dlopen: %s\n", dlerror()), 3;
  init_fn init = (init_fn)dlsym(h, "cuInit");
  devget_fn devget = (devget_fn)dlsym(h, "cuDeviceGet");
  ctx_fn ctx_create = (ctx_fn)dlsym(h, "cuCtxCreate_v2");
  alloc_fn alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
  meminfo_fn meminfo = (meminfo_fn)dlsym(h, "cuMemGetInfo_v2");
  printf("dlsym cuInit %s\n", shim_origin((void*)init, b1, sizeof b1));
  printf("dlsym cuMemAlloc_v2 %s\n", shim_origin((void*)alloc, b1, sizeof b1));
  printf("dlsym cuGetProcAddress_v2 %s\n", shim_origin(dlsym(h, "cuGetProcAddress_v2"), b1, sizeof b1));
  printf("dlsym RTLD_DEFAULT %s RTLD_NEXT %s missing %s\n",
         shim_origin(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), b2, sizeof b2),
         shim_origin(dlsym(RTLD_NEXT, "cuMemAlloc_v2"), b3, sizeof b3),
         dlsym(h, "cuNoSuchFunction") == NULL && dlerror() != NULL ? "null+dlerror" : "found");
  int dev;
  void* ctx;
  if (init(0) != 0 || devget(&dev, 0) != 0 || ctx_create(&ctx, 0, dev) != 0) return 3;
  unsigned long long p;
  int rc, ok = 0;
  while ((rc = alloc(&p, chunk)) == 0) ok++;
  size_t f = 0, t = 0;
  meminfo(&f, &t);
  printf("fill each=%zu ok=%d rc=%d\nmeminfo free=%zu total=%zu\n", chunk, ok, rc, f, t);
  return 0;
}
