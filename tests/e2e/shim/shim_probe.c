/* A CUDA program for the shim's end-to-end tests, linked with -lcuda (the fake libcuda.so.1).
 * Runs the operations given as arguments on device 0 (or -d N) and prints one line per
 * operation, e.g. "fill cuMemAlloc_v2 each=1048576 ok=64 rc=2". Operations:
 *   fill API SIZE     allocate SIZE with API until refused; keep everything
 *   alloc API SIZE    one allocation, kept
 *   freeall           free everything kept, each with its API's free
 *   meminfo           cuMemGetInfo_v2; meminfo-null: the three NULL-pointer forms
 *   totalmem DEV      cuDeviceTotalMem_v2
 *   noctx API SIZE    the allocation from a thread that has no context; noctx-meminfo likewise
 *   fork API SIZE     a forked child allocates SIZE (and exits holding it); the parent waits
 *   outlive SECONDS   a forked child that allocates nothing sleeps SECONDS; the parent goes on once
 *                     the child runs (and may exit first: the child must not keep its slot alive)
 *   doublefree API SIZE  allocate, free twice
 *   churn API SIZE N  allocate and free N times: "churn API refused=R"
 *   loop API SIZE     allocate and free forever (for kill tests)
 *   hold              wait until stdin is closed
 *   use DEV           a new context on device DEV, current from then on (what is kept stays counted
 *                     on the device it was allocated on)
 *   gate PATH         print "ready", then spin until PATH exists (starts processes together)
 * APIs: cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemAllocManaged cuMemCreate cuMemAllocAsync
 *   cuMemAllocAsync_ptsz cuMemAllocFromPoolAsync (a created device pool) cuMemAllocFromPoolAsync_ptsz
 *   defaultpool (cuMemAllocFromPoolAsync on the default pool) hostpool (a host-located pool)
 *   cuArrayCreate_v2 cuArray3DCreate_v2 cuMipmappedArrayCreate, and create@1 (cuMemCreate located on
 *   device 1 while the context is on device 0). SIZE is what the shim should
 *   count, except for cuMipmappedArrayCreate (3 levels of a 1D array of SIZE elements). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

struct held {
  int api;
  uint64_t key;
};

static const char* const kApis[] = {"cuMemAlloc_v2",
                                    "cuMemAllocPitch_v2",
                                    "cuMemAllocManaged",
                                    "cuMemCreate",
                                    "cuMemAllocAsync",
                                    "cuMemAllocAsync_ptsz",
                                    "cuMemAllocFromPoolAsync",
                                    "cuMemAllocFromPoolAsync_ptsz",
                                    "defaultpool",
                                    "hostpool",
                                    "cuArrayCreate_v2",
                                    "cuArray3DCreate_v2",
                                    "cuMipmappedArrayCreate",
                                    "create@1"};
enum {
  A_ALLOC,
  A_PITCH,
  A_MANAGED,
  A_CREATE,
  A_ASYNC,
  A_ASYNC_PT,
  A_POOL,
  A_POOL_PT,
  A_DEFPOOL,
  A_HOSTPOOL,
  A_ARRAY,
  A_ARRAY3D,
  A_MIPMAP,
  A_CREATE1,
  A_COUNT
};

static struct held* g_held;
static size_t g_nheld, g_capheld;
static CUdevice g_dev;
static CUmemoryPool g_pool, g_hostpool;

static int api_of(const char* name) {
  for (int i = 0; i < A_COUNT; i++) {
    if (strcmp(kApis[i], name) == 0) return i;
  }
  fprintf(stderr, "shim_probe: unknown API %s\n", name);
  exit(2);
}

static CUmemoryPool pool_for(int api) {
  if (api == A_DEFPOOL) {
    CUmemoryPool p;
    cuDeviceGetDefaultMemPool(&p, g_dev);
    return p;
  }
  CUmemoryPool* slot = api == A_HOSTPOOL ? &g_hostpool : &g_pool;
  if (*slot == NULL) {
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = api == A_HOSTPOOL ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = api == A_HOSTPOOL ? 0 : g_dev;
    if (cuMemPoolCreate(slot, &props) != CUDA_SUCCESS) exit(3);
  }
  return *slot;
}

static CUresult do_array(int api, uint64_t size, uint64_t* key) {
  CUarray a = NULL;
  CUmipmappedArray m = NULL;
  CUresult rc;
  if (api == A_ARRAY) {
    CUDA_ARRAY_DESCRIPTOR d = {size / 16, 0, CU_AD_FORMAT_FLOAT, 4};
    rc = cuArrayCreate_v2(&a, &d);
  } else if (api == A_ARRAY3D) {
    CUDA_ARRAY3D_DESCRIPTOR d = {size / 128, 8, 4, CU_AD_FORMAT_HALF, 2, 0};
    rc = cuArray3DCreate_v2(&a, &d);
  } else {
    CUDA_ARRAY3D_DESCRIPTOR d = {size, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
    rc = cuMipmappedArrayCreate(&m, &d, 3);
  }
  *key = api == A_MIPMAP ? (uint64_t)(uintptr_t)m : (uint64_t)(uintptr_t)a;
  return rc;
}

static CUresult do_alloc(int api, uint64_t size, uint64_t* key) {
  CUdeviceptr p = 0;
  CUresult rc;
  size_t pitch = 0;
  switch (api) {
    case A_ALLOC:
      rc = cuMemAlloc_v2(&p, size);
      break;
    case A_PITCH:
      rc = cuMemAllocPitch_v2(&p, &pitch, size / 1024 - 24, 1024, 4);
      break;
    case A_MANAGED:
      rc = cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
      break;
    case A_ASYNC:
      rc = cuMemAllocAsync(&p, size, NULL);
      break;
    case A_ASYNC_PT:
      rc = cuMemAllocAsync_ptsz(&p, size, CU_STREAM_PER_THREAD);
      break;
    case A_POOL:
    case A_DEFPOOL:
    case A_HOSTPOOL:
      rc = cuMemAllocFromPoolAsync(&p, size, pool_for(api), NULL);
      break;
    case A_POOL_PT:
      rc = cuMemAllocFromPoolAsync_ptsz(&p, size, pool_for(api), CU_STREAM_PER_THREAD);
      break;
    case A_CREATE:
    case A_CREATE1: {
      CUmemAllocationProp prop;
      memset(&prop, 0, sizeof prop);
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = api == A_CREATE1 ? 1 : g_dev;
      CUmemGenericAllocationHandle h = 0;
      rc = cuMemCreate(&h, size, &prop, 0);
      *key = h;
      return rc;
    }
    default:
      return do_array(api, size, key);
  }
  *key = p;
  return rc;
}

static CUresult do_free(int api, uint64_t key) {
  switch (api) {
    case A_CREATE:
    case A_CREATE1:
      return cuMemRelease(key);
    case A_ASYNC:
    case A_POOL:
    case A_DEFPOOL:
    case A_HOSTPOOL:
      return cuMemFreeAsync(key, NULL);
    case A_ASYNC_PT:
    case A_POOL_PT:
      return cuMemFreeAsync_ptsz(key, CU_STREAM_PER_THREAD);
    case A_ARRAY:
    case A_ARRAY3D:
      return cuArrayDestroy((CUarray)(uintptr_t)key);
    case A_MIPMAP:
      return cuMipmappedArrayDestroy((CUmipmappedArray)(uintptr_t)key);
    default:
      return cuMemFree_v2(key);
  }
}

static void keep(int api, uint64_t key) {
  if (g_nheld == g_capheld) {
    g_capheld = g_capheld ? g_capheld * 2 : 1024;
    g_held = realloc(g_held, g_capheld * sizeof *g_held);
    if (g_held == NULL) exit(3);
  }
  g_held[g_nheld++] = (struct held){api, key};
}

/* The bytes the shim should count for one allocation (see the header). */
static uint64_t each(int api, uint64_t size) {
  if (api == A_PITCH) return (size / 1024 - 24 + 511) / 512 * 512 * 1024; /* the fake's 512-byte pitch */
  return api == A_MIPMAP ? size + size / 2 + size / 4 : size;
}

static void op_fill(int api, uint64_t size) {
  uint64_t key, ok = 0;
  CUresult rc;
  while ((rc = do_alloc(api, size, &key)) == CUDA_SUCCESS) {
    keep(api, key);
    ok++;
  }
  printf("fill %s each=%llu ok=%llu rc=%d\n", kApis[api], (unsigned long long)each(api, size), (unsigned long long)ok,
         (int)rc);
}

static void op_alloc(int api, uint64_t size) {
  uint64_t key;
  CUresult rc = do_alloc(api, size, &key);
  if (rc == CUDA_SUCCESS) keep(api, key);
  printf("alloc %s %llu rc=%d\n", kApis[api], (unsigned long long)size, (int)rc);
}

static void op_freeall(void) {
  size_t failed = 0, n = g_nheld;
  while (g_nheld > 0) {
    g_nheld--;
    failed += do_free(g_held[g_nheld].api, g_held[g_nheld].key) != CUDA_SUCCESS;
  }
  printf("freeall freed=%zu failed=%zu\n", n - failed, failed);
}

static void op_meminfo(void) {
  size_t f = 0, t = 0;
  CUresult rc = cuMemGetInfo_v2(&f, &t);
  printf("meminfo free=%zu total=%zu rc=%d\n", f, t, (int)rc);
}

static void op_meminfo_null(void) {
  size_t f = 0, t = 0;
  CUresult a = cuMemGetInfo_v2(NULL, &t), b = cuMemGetInfo_v2(&f, NULL), c = cuMemGetInfo_v2(NULL, NULL);
  printf("meminfo-null rc=%d,%d,%d free=%zu total=%zu\n", (int)a, (int)b, (int)c, f, t);
}

struct noctx_args {
  int api; /* -1: cuMemGetInfo_v2 */
  uint64_t size;
  CUresult rc;
};

static void* noctx_thread(void* p) {
  struct noctx_args* a = p;
  uint64_t key;
  size_t f, t;
  a->rc = a->api < 0 ? cuMemGetInfo_v2(&f, &t) : do_alloc(a->api, a->size, &key);
  return NULL;
}

static void op_noctx(int api, uint64_t size) {
  struct noctx_args a = {api, size, CUDA_SUCCESS};
  pthread_t th;
  pthread_create(&th, NULL, noctx_thread, &a);
  pthread_join(th, NULL);
  printf("noctx %s rc=%d\n", api < 0 ? "cuMemGetInfo_v2" : kApis[api], (int)a.rc);
}

static void op_fork(int api, uint64_t size) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    uint64_t key;
    CUresult rc = do_alloc(api, size, &key);
    printf("child alloc %s %llu rc=%d\n", kApis[api], (unsigned long long)size, (int)rc);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("fork child-exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void op_outlive(unsigned seconds) {
  fflush(stdout);
  int ready[2];
  if (pipe(ready) != 0) exit(5);
  pid_t pid = fork();
  if (pid == 0) { /* running: the fork handlers have run */
    if (write(ready[1], "r", 1) != 1) _exit(1);
    sleep(seconds);
    _exit(0);
  }
  char c = 0;
  int ok = pid > 0 && read(ready[0], &c, 1) == 1;
  close(ready[0]);
  close(ready[1]);
  printf("outlive child=%s\n", ok ? "started" : "failed");
}

static void op_doublefree(int api, uint64_t size) {
  uint64_t key;
  CUresult a = do_alloc(api, size, &key);
  CUresult b = do_free(api, key), c = do_free(api, key);
  printf("doublefree %s rc=%d,%d,%d\n", kApis[api], (int)a, (int)b, (int)c);
}

static void op_churn(int api, uint64_t size, uint64_t n) {
  uint64_t refused = 0, key;
  for (uint64_t i = 0; i < n; i++) {
    if (do_alloc(api, size, &key) != CUDA_SUCCESS) {
      refused++;
    } else if (do_free(api, key) != CUDA_SUCCESS) {
      exit(4);
    }
  }
  printf("churn %s refused=%llu\n", kApis[api], (unsigned long long)refused);
}

static void op_loop(int api, uint64_t size) {
  printf("loop %s\n", kApis[api]);
  fflush(stdout);
  for (;;) {
    uint64_t key;
    if (do_alloc(api, size, &key) == CUDA_SUCCESS) do_free(api, key);
  }
}

static void op_hold(void) {
  printf("holding\n");
  fflush(stdout);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
}

static void op_gate(const char* path) {
  printf("ready\n");
  fflush(stdout);
  while (access(path, F_OK) != 0) usleep(100);
}

static void setup(int dev) {
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&g_dev, dev) != CUDA_SUCCESS ||
      cuCtxCreate_v2(&ctx, 0, g_dev) != CUDA_SUCCESS) {
    fprintf(stderr, "shim_probe: no device %d\n", dev);
    exit(3);
  }
}

static void op_use(int dev) {
  CUcontext ctx;
  CUresult rc = cuDeviceGet(&g_dev, dev);
  if (rc == CUDA_SUCCESS) rc = cuCtxCreate_v2(&ctx, 0, g_dev);
  printf("use %d rc=%d\n", dev, (int)rc);
}

static uint64_t num(const char* s) {
  return strtoull(s, NULL, 0);
}

int main(int argc, char** argv) {
  int i = 1;
  if (argc > 2 && strcmp(argv[1], "-d") == 0) {
    setup(atoi(argv[2]));
    i = 3;
  } else {
    setup(0);
  }
  for (; i < argc; i++) {
    const char* op = argv[i];
    int two = i + 2 < argc;
    if (strcmp(op, "fill") == 0 && two)
      op_fill(api_of(argv[i + 1]), num(argv[i + 2])), i += 2;
    else if (strcmp(op, "alloc") == 0 && two)
      op_alloc(api_of(argv[i + 1]), num(argv[i + 2])), i += 2;
    else if (strcmp(op, "noctx") == 0 && two)
      op_noctx(api_of(argv[i + 1]), num(argv[i + 2])), i += 2;
    else if (strcmp(op, "fork") == 0 && two)
      op_fork(api_of(argv[i + 1]), num(argv[i + 2])), i += 2;
    else if (strcmp(op, "doublefree") == 0 && two)
      op_doublefree(api_of(argv[i + 1]), num(argv[i + 2])), i += 2;
    else if (strcmp(op, "churn") == 0 && i + 3 < argc)
      op_churn(api_of(argv[i + 1]), num(argv[i + 2]), num(argv[i + 3])), i += 3;
    else if (strcmp(op, "loop") == 0 && two)
      op_loop(api_of(argv[i + 1]), num(argv[i + 2]));
    else if (strcmp(op, "outlive") == 0 && i + 1 < argc)
      op_outlive((unsigned)num(argv[++i]));
    else if (strcmp(op, "gate") == 0 && i + 1 < argc)
      op_gate(argv[++i]);
    else if (strcmp(op, "totalmem") == 0 && i + 1 < argc) {
      size_t t = 0;
      CUresult rc = cuDeviceTotalMem_v2(&t, (CUdevice)num(argv[++i]));
      printf("totalmem %zu rc=%d\n", t, (int)rc);
    } else if (strcmp(op, "freeall") == 0)
      op_freeall();
    else if (strcmp(op, "meminfo") == 0)
      op_meminfo();
    else if (strcmp(op, "meminfo-null") == 0)
      op_meminfo_null();
    else if (strcmp(op, "noctx-meminfo") == 0)
      op_noctx(-1, 0);
    else if (strcmp(op, "hold") == 0)
      op_hold();
    else if (strcmp(op, "use") == 0 && i + 1 < argc)
      op_use((int)num(argv[++i]));
    else {
      fprintf(stderr, "shim_probe: bad operation %s\n", op);
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}
