/* Reads device 0's memory through NVML (dlopen of libnvidia-ml.so.1, as nvidia-smi and Python
 * bindings do): "uuid U", "v1 total=T free=F used=U", "v2 total=T reserved=R free=F used=U rc=0",
 * and the return code of the v2 call with a wrong version field. With "mig": the same for the
 * first MIG device of GPU 0. */
#include <stdlib.h>

#include "shim_origin.h"

typedef struct {
  unsigned long long total, free, used;
} mem1;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} mem2;
#define MEM2_VERSION ((unsigned)(sizeof(mem2) | (2u << 24)))

int main(int argc, char** argv) {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return fprintf(stderr, "shim_nvml: %s\n", dlerror()), 3;
  int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
  int (*get)(unsigned, void**) = (int (*)(unsigned, void**))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  int (*info1)(void*, mem1*) = (int (*)(void*, mem1*))dlsym(h, "nvmlDeviceGetMemoryInfo");
  int (*info2)(void*, mem2*) = (int (*)(void*, mem2*))dlsym(h, "nvmlDeviceGetMemoryInfo_v2");
  char buf[256];
  printf("dlsym nvmlDeviceGetMemoryInfo %s\n", shim_origin((void*)info1, buf, sizeof buf));
  void* dev = NULL;
  if (init == NULL || get == NULL || init() != 0 || get(0, &dev) != 0) return 3;
  if (argc > 1 && argv[1][0] == 'm') {
    int (*mig)(void*, unsigned, void**) =
        (int (*)(void*, unsigned, void**))dlsym(h, "nvmlDeviceGetMigDeviceHandleByIndex");
    if (mig == NULL || mig(dev, 0, &dev) != 0) return 3;
  }
  int (*uuid)(void*, char*, unsigned) = (int (*)(void*, char*, unsigned))dlsym(h, "nvmlDeviceGetUUID");
  char text[96] = "";
  if (uuid == NULL || uuid(dev, text, sizeof text) != 0) return 3;
  printf("uuid %s\n", text);
  mem1 m1 = {0, 0, 0};
  int rc1 = info1(dev, &m1);
  printf("v1 total=%llu free=%llu used=%llu rc=%d\n", m1.total, m1.free, m1.used, rc1);
  mem2 m2 = {MEM2_VERSION, 0, 0, 0, 0};
  int rc2 = info2(dev, &m2);
  printf("v2 total=%llu reserved=%llu free=%llu used=%llu rc=%d\n", m2.total, m2.reserved, m2.free, m2.used, rc2);
  mem2 bad = {MEM2_VERSION + 1, 0, 0, 0, 0};
  printf("v2-bad-version rc=%d\n", info2(dev, &bad));
  return 0;
}
