/* The real driver libraries: libcuda.so.1 and libnvidia-ml.so.1 are opened on first use with
 * dlopen (already loaded by the application in practice, so this finds the same copy) and their
 * functions looked up with glibc's own dlsym, never the shim's. */
#include <dlfcn.h>
#include <sched.h>

#include "gf_shim.h"

#if defined(__x86_64__)
#define GF_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GF_GLIBC_BASE "GLIBC_2.17"
#else
#define GF_GLIBC_BASE "GLIBC_2.34"
#endif

#define GF_NAME_ITEM(name) #name,
const char* const gf_cuda_names[GF_CUDA_FN_COUNT] = {GF_CUDA_FUNCS(GF_NAME_ITEM)};
static const char* const g_nvml_names[GF_NVML_FN_COUNT] = {GF_NVML_FUNCS(GF_NAME_ITEM)};
#undef GF_NAME_ITEM

void* (*gf_real_dlsym_fn)(void*, const char*);

struct gf_lib {
  const char* soname;
  const char* const* names;
  void** fns;
  int count;
  int state; /* 0 not loaded, 1 loading, 2 loaded; back to 0 when the library is missing */
  int found; /* the library was found at the last attempt */
};

static void* g_cuda_fns[GF_CUDA_FN_COUNT];
static void* g_nvml_fns[GF_NVML_FN_COUNT];
static struct gf_lib g_cuda = {"libcuda.so.1", gf_cuda_names, g_cuda_fns, GF_CUDA_FN_COUNT, 0, 0};
static struct gf_lib g_nvml = {"libnvidia-ml.so.1", g_nvml_names, g_nvml_fns, GF_NVML_FN_COUNT, 0, 0};
/* Set while this thread runs dlopen: a library constructor calling back into the shim gets
 * "missing" instead of waiting for itself. */
static __thread int t_loading __attribute__((tls_model("initial-exec")));

void gf_resolve_real_dlsym(void) {
  if (__atomic_load_n(&gf_real_dlsym_fn, __ATOMIC_ACQUIRE) != NULL) return;
  void* f = dlvsym(RTLD_NEXT, "dlsym", GF_GLIBC_BASE);
  if (f == NULL) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  __atomic_store_n(&gf_real_dlsym_fn, (void* (*)(void*, const char*))f, __ATOMIC_RELEASE);
}

static void open_lib(struct gf_lib* l) {
  t_loading = 1;
  gf_resolve_real_dlsym();
  void* h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
  for (int i = 0; i < l->count; i++) {
    void* f = h != NULL && gf_real_dlsym_fn != NULL ? gf_real_dlsym_fn(h, l->names[i]) : NULL;
    __atomic_store_n(&l->fns[i], f, __ATOMIC_RELAXED);
  }
  t_loading = 0;
  __atomic_store_n(&l->found, h != NULL, __ATOMIC_RELAXED);
  __atomic_store_n(&l->state, h != NULL ? 2 : 0, __ATOMIC_RELEASE);
}

/* 1 when the library is loaded. A missing library is looked for again at the next call. */
static int lib_ready(struct gf_lib* l) {
  if (GF_LIKELY(__atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == 2)) return 1;
  if (t_loading) return 0;
  int expected = 0;
  if (__atomic_compare_exchange_n(&l->state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    open_lib(l);
  } else {
    while (__atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == 1) sched_yield();
  }
  return __atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == 2;
}

void* gf_cuda(enum gf_cuda_fn f) {
  if (GF_LIKELY(__atomic_load_n(&g_cuda.state, __ATOMIC_ACQUIRE) == 2)) return g_cuda_fns[f];
  return lib_ready(&g_cuda) ? g_cuda_fns[f] : NULL;
}

CUresult gf_cuda_missing(void) {
  return __atomic_load_n(&g_cuda.found, __ATOMIC_RELAXED) ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NOT_INITIALIZED;
}

void* gf_nvml(enum gf_nvml_fn f) {
  return lib_ready(&g_nvml) ? g_nvml_fns[f] : NULL;
}

nvmlReturn_t gf_nvml_missing(void) {
  return __atomic_load_n(&g_nvml.found, __ATOMIC_RELAXED) ? NVML_ERROR_FUNCTION_NOT_FOUND
                                                          : NVML_ERROR_LIBRARY_NOT_FOUND;
}

void gf_real_after_fork(void) {
  if (g_cuda.state == 1) g_cuda.state = 0;
  if (g_nvml.state == 1) g_nvml.state = 0;
  t_loading = 0;
}
