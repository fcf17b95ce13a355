/* Finds the driver the way the CUDA runtime does: dlopen + dlsym of cuGetProcAddress_v2 (or of
 * the CUDA 11 cuGetProcAddress with "v1"), then every function through it. Prints where each
 * lookup lands, "resolve <name> <version> <flags> <library>:<symbol>", then fills device 0 with
 * CHUNK bytes per allocation through the resolved cuMemAlloc and per-thread cuMemAllocAsync. */
#include <stdint.h>
#include <stdlib.h>

#include "shim_origin.h"

typedef int (*gpa2_fn)(const char*, void**, int, unsigned long long, int*);
typedef int (*gpa1_fn)(const char*, void**, int, unsigned long long);
typedef int (*alloc_fn)(unsigned long long*, size_t);
typedef int (*async_fn)(unsigned long long*, size_t, void*);
typedef int (*init_fn)(unsigned);
typedef int (*devget_fn)(int*, int);
typedef int (*ctx_fn)(void**, unsigned, int);

static int g_v1;
static void* g_gpa;

static void* resolve(const char* name, int version, unsigned long long flags) {
  void* fn = NULL;
  int status = -1, rc;
  if (g_v1) {
    rc = ((gpa1_fn)g_gpa)(name, &fn, version, flags);
  } else {
    rc = ((gpa2_fn)g_gpa)(name, &fn, version, flags, &status);
  }
  char buf[256];
  printf("resolve %s %d %llu %s rc=%d status=%d\n", name, version, flags, shim_origin(fn, buf, sizeof buf), rc, status);
  return rc == 0 ? fn : NULL;
}

int main(int argc, char** argv) {
  g_v1 = argc > 1 && argv[1][0] == 'v' && argv[1][1] == '1';
  size_t chunk = argc > 2 ? strtoull(argv[2], NULL, 0) : 1u << 20;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return 3;
  g_gpa = dlsym(h, g_v1 ? "cuGetProcAddress" : "cuGetProcAddress_v2");
  /* The runtime then takes cuGetProcAddress from cuGetProcAddress itself and uses that. */
  g_gpa = resolve("cuGetProcAddress", g_v1 ? 11030 : 12000, 0);
  static const char* const kNames[] = {"cuMemFree",         "cuMemGetInfo",    "cuMemAllocPitch",
                                       "cuMemAllocManaged", "cuMemCreate",     "cuMemRelease",
                                       "cuArrayCreate",     "cuArray3DCreate", "cuMipmappedArrayCreate",
                                       "cuDeviceTotalMem",  "cuMemPoolCreate", "cuInit"};
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++) resolve(kNames[i], 12000, 0);
  resolve("cuMemAlloc", 3000, 0);
  resolve("cuMemAllocAsync", 11000, 0);
  resolve("cuMemFreeAsync", 12000, 0);
  resolve("cuMemAllocFromPoolAsync", 12000, 2);
  alloc_fn alloc = (alloc_fn)resolve("cuMemAlloc", 12000, 0);
  async_fn async = (async_fn)resolve("cuMemAllocAsync", 12000, 2);
  init_fn init = (init_fn)resolve("cuInit", 12000, 0);
  devget_fn devget = (devget_fn)resolve("cuDeviceGet", 12000, 0);
  ctx_fn ctx_create = (ctx_fn)resolve("cuCtxCreate", 12000, 0);
  int dev;
  void* ctx;
  if (alloc == NULL || async == NULL || init(0) != 0 || devget(&dev, 0) != 0 || ctx_create(&ctx, 0, dev) != 0) return 3;
  unsigned long long p;
  int rc, ok = 0;
  while ((rc = (ok % 2 ? alloc(&p, chunk) : async(&p, chunk, (void*)2))) == 0) ok++;
  printf("fill each=%zu ok=%d rc=%d\n", chunk, ok, rc);
  return 0;
}
