/* Contexts: created and primary contexts, one current context (and a push/pop stack) per
 * thread. A thread that never set a context has none: cuCtxGetDevice then fails with
 * CUDA_ERROR_INVALID_CONTEXT, as the real driver does. */
#include <pthread.h>
#include <stdlib.h>

#include "fake_cuda.h"
#include "mps.h"

#define FAKE_STACK_DEPTH 16

static __thread struct fake_ctx* t_stack[FAKE_STACK_DEPTH];
static __thread int t_depth; /* t_stack[t_depth - 1] is current; 0: none */
static struct fake_ctx g_primary[FAKE_MAX_DEVICES];
static int g_primary_refs[FAKE_MAX_DEVICES];
static pthread_mutex_t g_primary_lock = PTHREAD_MUTEX_INITIALIZER;

static struct fake_ctx* current(void) {
  return t_depth > 0 ? t_stack[t_depth - 1] : NULL;
}

static int valid(const struct fake_ctx* c) {
  return c != NULL && c->magic == FAKE_CTX_MAGIC;
}

static void set_current(struct fake_ctx* c) {
  if (t_depth == 0) t_depth = 1;
  t_stack[t_depth - 1] = c;
  if (c == NULL && t_depth == 1) t_depth = 0;
}

CUresult fake_current_device(CUdevice* dev) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  struct fake_ctx* c = current();
  if (!valid(c)) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = c->dev;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev) {
  (void)flags;
  CUresult rc = fake_check_device(dev);
  if (rc == CUDA_SUCCESS) rc = fake_mps_context(dev); /* mps.h: the GPU's compute mode */
  if (rc != CUDA_SUCCESS) return rc;
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fake_ctx* c = calloc(1, sizeof *c);
  if (c == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (struct fake_ctx){FAKE_CTX_MAGIC, dev, 0};
  if (t_depth < FAKE_STACK_DEPTH) t_stack[t_depth++] = c; /* pushed, as the real driver does */
  *ctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  struct fake_ctx* c = (struct fake_ctx*)ctx;
  if (!valid(c) || c->primary) return CUDA_ERROR_INVALID_CONTEXT;
  for (int i = 0; i < t_depth; i++) {
    if (t_stack[i] == c) t_stack[i] = NULL;
  }
  while (t_depth > 0 && t_stack[t_depth - 1] == NULL) t_depth--;
  c->magic = 0;
  free(c);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  struct fake_ctx* c = (struct fake_ctx*)ctx;
  if (c != NULL && !valid(c)) return CUDA_ERROR_INVALID_CONTEXT;
  set_current(c);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *ctx = (CUcontext)current();
  return fake_check_init();
}

FAKE_API CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  return fake_current_device(device);
}

FAKE_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!valid((struct fake_ctx*)ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_depth == FAKE_STACK_DEPTH) return CUDA_ERROR_OUT_OF_MEMORY;
  t_stack[t_depth++] = (struct fake_ctx*)ctx;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  struct fake_ctx* c = t_stack[--t_depth];
  if (ctx != NULL) *ctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  CUresult rc = fake_check_device(dev);
  if (rc == CUDA_SUCCESS) rc = fake_mps_context(dev); /* mps.h: the GPU's compute mode */
  if (rc != CUDA_SUCCESS) return rc;
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_primary_lock);
  g_primary[dev] = (struct fake_ctx){FAKE_CTX_MAGIC, dev, 1};
  g_primary_refs[dev]++;
  pthread_mutex_unlock(&g_primary_lock);
  *ctx = (CUcontext)&g_primary[dev];
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  CUresult rc = fake_check_device(dev);
  if (rc != CUDA_SUCCESS) return rc;
  pthread_mutex_lock(&g_primary_lock);
  rc = g_primary_refs[dev] > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS) g_primary_refs[dev]--;
  pthread_mutex_unlock(&g_primary_lock);
  return rc;
}
