/* The controller of the swap tests (tests/e2e/swap/README.md), through the fake libcuda's
 * checkpoint API and the fake libnvidia-ml.so.1:
 *   swap_ctl lock PID [TIMEOUT_MS] | checkpoint PID | restore PID | unlock PID
 *       prints the CUresult's name; exit 0 on CUDA_SUCCESS, else 1
 *   swap_ctl state PID    RUNNING, LOCKED, CHECKPOINTED or FAILED (else the error's name, exit 1)
 *   swap_ctl tid PID      the target's checkpoint thread id
 *   swap_ctl free         the free bytes of device 0 (cuMemGetInfo: the GPU's memory less every live process's)
 *   swap_ctl procs        "<pid> <bytes>" per process NVML lists on GPU 0 (libnvidia-ml.so.1 from the loader path)
 *   swap_ctl fill BYTES   allocates BYTES on device 0, prints "filled", and waits until killed */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int report(CUresult rc) {
  const char* name = "?";
  cuGetErrorName(rc, &name);
  printf("%s\n", name);
  return rc == CUDA_SUCCESS ? 0 : 1;
}

static CUresult context(void) {
  CUdevice dev;
  CUcontext ctx;
  CUresult rc = cuDeviceGet(&dev, 0);
  return rc == CUDA_SUCCESS ? cuCtxCreate(&ctx, 0, dev) : rc;
}

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} ProcessInfo;

/* NVML's view of GPU 0, by dlopen (no NVML header in the fakes). */
static int procs(void) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (lib == NULL) return printf("no libnvidia-ml.so.1: %s\n", dlerror()), 1;
  int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
  int (*handle)(unsigned, void**) = (int (*)(unsigned, void**))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  int (*list)(void*, unsigned*, ProcessInfo*) =
      (int (*)(void*, unsigned*, ProcessInfo*))dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  void* dev = NULL;
  ProcessInfo info[64];
  unsigned n = 64;
  int rc = init == NULL || handle == NULL || list == NULL ? -1 : init();
  if (rc == 0) rc = handle(0, &dev);
  if (rc == 0) rc = list(dev, &n, info);
  if (rc != 0) return printf("nvml error %d\n", rc), 1;
  for (unsigned i = 0; i < n; i++) printf("%u %llu\n", info[i].pid, info[i].usedGpuMemory);
  return 0;
}

static int state(int pid) {
  static const char* const names[] = {"RUNNING", "LOCKED", "CHECKPOINTED", "FAILED"};
  CUprocessState s;
  CUresult rc = cuCheckpointProcessGetState(pid, &s);
  if (rc != CUDA_SUCCESS) return report(rc);
  printf("%s\n", (unsigned)s < 4 ? names[s] : "?");
  return 0;
}

static int fill(unsigned long long bytes) {
  CUdeviceptr p;
  CUresult rc = context();
  if (rc == CUDA_SUCCESS) rc = cuMemAlloc(&p, bytes);
  if (rc != CUDA_SUCCESS) return report(rc);
  printf("filled\n");
  fflush(stdout);
  for (;;) pause();
}

static int pid_op(const char* op, int pid, const char* arg) {
  if (strcmp(op, "lock") == 0) {
    CUcheckpointLockArgs a;
    memset(&a, 0, sizeof a);
    a.timeoutMs = arg != NULL ? (unsigned)strtoul(arg, NULL, 10) : 0;
    return report(cuCheckpointProcessLock(pid, &a));
  }
  if (strcmp(op, "checkpoint") == 0) return report(cuCheckpointProcessCheckpoint(pid, NULL));
  if (strcmp(op, "restore") == 0) return report(cuCheckpointProcessRestore(pid, NULL));
  if (strcmp(op, "unlock") == 0) return report(cuCheckpointProcessUnlock(pid, NULL));
  if (strcmp(op, "state") == 0) return state(pid);
  if (strcmp(op, "tid") == 0) {
    int tid = 0;
    CUresult rc = cuCheckpointProcessGetRestoreThreadId(pid, &tid);
    return rc != CUDA_SUCCESS ? report(rc) : (printf("%d\n", tid), 0);
  }
  fprintf(stderr, "swap_ctl: unknown operation \"%s\"\n", op);
  return 2;
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: swap_ctl OP [PID|BYTES] [TIMEOUT_MS]\n"), 2;
  if (strcmp(argv[1], "procs") == 0) return procs();
  CUresult rc = cuInit(0);
  if (rc != CUDA_SUCCESS) return report(rc);
  if (strcmp(argv[1], "free") == 0) {
    size_t free_b = 0, total = 0;
    if ((rc = context()) == CUDA_SUCCESS) rc = cuMemGetInfo(&free_b, &total);
    return rc != CUDA_SUCCESS ? report(rc) : (printf("%zu\n", free_b), 0);
  }
  if (argc < 3) return fprintf(stderr, "swap_ctl %s: needs an argument\n", argv[1]), 2;
  if (strcmp(argv[1], "fill") == 0) return fill(strtoull(argv[2], NULL, 10));
  return pid_op(argv[1], atoi(argv[2]), argc > 3 ? argv[3] : NULL);
}
