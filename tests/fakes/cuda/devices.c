/* Simulated devices from GPUFRAC_FAKE_CUDA_DEVICES="GPU-<uuid>=<bytes>[,MIG-<uuid>=<bytes>...]"
 * (bytes: a decimal count, or with a Ki, Mi, Gi or Ti suffix). Unset: the list `gpufrac simulate
 * init-root` embedded when it installed this library into a simulated driver tree, where each entry
 * also names the device nodes it needs ("=<bytes>@/dev/nvidia0[+/dev/nvidia-caps/nvidia-cap30...]")
 * and is visible only where they all exist, as a real driver sees only the GPUs a container got.
 * Neither: the one GPU of nvml/machines/a100-40gb-x1.yaml. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "fake_cuda.h"
#include "mps.h"

#define FAKE_DEFAULT_DEVICES "GPU-894e9a6d-f600-b098-3d59-138988473c2c=40536Mi"
#define FAKE_EMBED_MARKER "GPUFRAC-EMBEDDED-CUDA-DEVICES:"

/* Written after the marker by `gpufrac simulate init-root` in the copy it installs (NUL-terminated;
 * volatile: the bytes in the file are read, never a folded constant). */
__attribute__((used)) static volatile const char g_embedded[8192] = FAKE_EMBED_MARKER;

struct fake_device fake_devices[FAKE_MAX_DEVICES];
int fake_device_count;
static int g_initialized; /* 0 no, 1 yes, -1 bad device list */
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

static int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int parse_uuid(const char* s, size_t n, uint8_t out[16]) {
  if (n != 40 || (strncmp(s, "GPU-", 4) != 0 && strncmp(s, "MIG-", 4) != 0)) return -1;
  int k = 0;
  for (size_t i = 4; i < n; i++) {
    if (i == 12 || i == 17 || i == 22 || i == 27) {
      if (s[i] != '-') return -1;
      continue;
    }
    if (hex(s[i]) < 0 || hex(s[i + 1]) < 0) return -1;
    out[k++] = (uint8_t)(hex(s[i]) << 4 | hex(s[i + 1]));
    i++;
  }
  return k == 16 ? 0 : -1;
}

static int parse_bytes(const char* s, uint64_t* out) {
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return -1;
  static const char* const kSuffix[] = {"", "Ki", "Mi", "Gi", "Ti"};
  for (int i = 0; i < 5; i++) {
    if (strcmp(end, kSuffix[i]) == 0) {
      *out = (uint64_t)v << (10 * i);
      return 0;
    }
  }
  return -1;
}

/* "@/dev/a+/dev/b": every node exists (an entry without '@' is always visible). Cuts the suffix. */
static int visible(char* item) {
  char* at = strchr(item, '@');
  if (at == NULL) return 1;
  *at = '\0';
  char* save = NULL;
  for (char* node = strtok_r(at + 1, "+", &save); node != NULL; node = strtok_r(NULL, "+", &save))
    if (access(node, F_OK) != 0) return 0;
  return 1;
}

static int parse_devices(const char* spec) {
  char buf[8192];
  snprintf(buf, sizeof buf, "%s", spec);
  fake_device_count = 0;
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
    if (!visible(item)) continue;
    char* eq = strchr(item, '=');
    struct fake_device* d = &fake_devices[fake_device_count];
    if (fake_device_count == FAKE_MAX_DEVICES || eq == NULL || parse_uuid(item, (size_t)(eq - item), d->bytes) != 0 ||
        parse_bytes(eq + 1, &d->total) != 0) {
      fprintf(stderr,
              "fake libcuda: GPUFRAC_FAKE_CUDA_DEVICES: bad entry \"%s\"; accepted: "
              "GPU-<uuid>=<bytes>[,MIG-<uuid>=<bytes>...], at most %d\n",
              item, FAKE_MAX_DEVICES);
      return -1;
    }
    snprintf(d->uuid, sizeof d->uuid, "%.*s", (int)(eq - item), item);
    d->used = 0;
    fake_device_count++;
  }
  return 0;
}

static void init_devices(void) {
  char embedded[sizeof g_embedded];
  for (size_t i = 0; i < sizeof embedded; i++) embedded[i] = g_embedded[i];
  embedded[sizeof embedded - 1] = '\0';
  const char* installed = embedded + strlen(FAKE_EMBED_MARKER);
  const char* spec = getenv("GPUFRAC_FAKE_CUDA_DEVICES");
  if (spec == NULL) spec = *installed != '\0' ? installed : FAKE_DEFAULT_DEVICES;
  g_initialized = parse_devices(spec) == 0 && fake_gpu_config() == 0 ? 1 : -1;
}

static pthread_once_t g_mps_once = PTHREAD_ONCE_INIT;
static CUresult g_mps_rc = CUDA_SUCCESS;
static void mps_init(void) {
  g_mps_rc = fake_mps_init();
}

FAKE_API CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_once(&g_init_once, init_devices);
  if (g_initialized < 0) return CUDA_ERROR_INVALID_VALUE;
  if (fake_device_count > 0) pthread_once(&g_mps_once, mps_init); /* mps.h: connect to an MPS daemon */
  if (g_mps_rc != CUDA_SUCCESS) return g_mps_rc;
  if (fake_device_count > 0) fake_ckpt_init(); /* ckpt.h: the page and the checkpoint thread */
  return fake_device_count > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult fake_check_init(void) {
  return g_initialized == 1 && fake_device_count > 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult fake_check_device(CUdevice dev) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  return dev >= 0 && dev < fake_device_count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_API CUresult cuDriverGetVersion(int* version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetCount(int* count) {
  CUresult rc = fake_check_init();
  if (rc != CUDA_SUCCESS) return rc;
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  *count = fake_device_count;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  CUresult rc = fake_check_device(ordinal);
  if (rc != CUDA_SUCCESS) return rc;
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  CUresult rc = fake_check_device(dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "gpufrac fake %s %d", strncmp(fake_devices[dev].uuid, "MIG-", 4) ? "GPU" : "MIG", dev);
  return CUDA_SUCCESS;
}

static CUresult get_uuid(CUuuid* uuid, CUdevice dev) {
  CUresult rc = fake_check_device(dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (uuid == NULL) return CUDA_ERROR_INVALID_VALUE;
  memcpy(uuid->bytes, fake_devices[dev].bytes, 16);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return get_uuid(uuid, dev);
}
FAKE_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return get_uuid(uuid, dev);
}

FAKE_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  CUresult rc = fake_check_device(dev);
  if (rc != CUDA_SUCCESS) return rc;
  if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
  *bytes = (size_t)fake_devices[dev].total;
  return CUDA_SUCCESS;
}
