/* Which limit applies: a CUDA device or NVML handle is matched to a limit-file line by its UUID
 * octets (GPU or MIG). A device absent from the limit file is unlimited. */
#include <string.h>

#include "gf_shim.h"

#define GF_DEVMAP_SIZE 64
/* Per CUDA ordinal: 0 not looked up yet, 1 unlimited, 2 + i limited by device line i. */
static int g_devmap[GF_DEVMAP_SIZE];

/* The device of the calling thread's current context; the driver's error when there is none. */
static CUresult current_device(CUdevice* dev) {
  CUresult (*get)(CUdevice*) = (CUresult(*)(CUdevice*))gf_cuda(GF_cuCtxGetDevice);
  if (get == NULL) return gf_cuda_missing();
  *dev = -1;
  CUresult rc = get(dev);
  if (rc == CUDA_SUCCESS && *dev < 0) rc = CUDA_ERROR_INVALID_CONTEXT;
  return rc;
}

static CUresult device_uuid(CUdevice dev, uint8_t out[16]) {
  typedef CUresult (*uuid_fn)(CUuuid*, CUdevice);
  uuid_fn get = (uuid_fn)gf_cuda(GF_cuDeviceGetUuid_v2); /* _v2: the MIG UUID on a MIG device */
  if (get == NULL) get = (uuid_fn)gf_cuda(GF_cuDeviceGetUuid);
  if (get == NULL) return gf_cuda_missing();
  CUuuid u;
  CUresult rc = get(&u, dev);
  if (rc == CUDA_SUCCESS) memcpy(out, u.bytes, 16);
  return rc;
}

int gf_device_index(CUdevice dev, CUresult* err) {
  *err = CUDA_SUCCESS;
  int cached = dev >= 0 && dev < GF_DEVMAP_SIZE ? __atomic_load_n(&g_devmap[dev], __ATOMIC_RELAXED) : 0;
  if (GF_LIKELY(cached != 0)) return cached - 2;
  uint8_t bytes[16];
  CUresult rc = device_uuid(dev, bytes);
  if (rc != CUDA_SUCCESS) {
    *err = rc;
    return GF_UNLIMITED;
  }
  int idx = gf_config_find(&gf_g.cfg, bytes);
  if (dev >= 0 && dev < GF_DEVMAP_SIZE) __atomic_store_n(&g_devmap[dev], idx + 2, __ATOMIC_RELAXED);
  return idx;
}

#define GF_SOLE_UNKNOWN (-3)
#define GF_SOLE_NONE (-2) /* not one device: ask for the current one each time */
static int g_sole = GF_SOLE_UNKNOWN;

/* The limit index of the process's only CUDA device (one GPU or MIG instance per container, the
 * usual case), GF_SOLE_NONE with several, GF_SOLE_UNKNOWN while the driver cannot say yet. */
static int sole_index(void) {
  int sole = __atomic_load_n(&g_sole, __ATOMIC_RELAXED);
  if (GF_LIKELY(sole != GF_SOLE_UNKNOWN)) return sole;
  CUresult (*count)(int*) = (CUresult(*)(int*))gf_cuda(GF_cuDeviceGetCount);
  int n = 0;
  if (count == NULL || count(&n) != CUDA_SUCCESS) return GF_SOLE_UNKNOWN;
  CUresult err = CUDA_SUCCESS;
  sole = n == 1 ? gf_device_index(0, &err) : GF_SOLE_NONE;
  if (err != CUDA_SUCCESS) return GF_SOLE_UNKNOWN;
  __atomic_store_n(&g_sole, sole, __ATOMIC_RELAXED);
  return sole;
}

int gf_current_index(CUresult* err) {
  *err = CUDA_SUCCESS;
  int sole = sole_index();
  if (GF_LIKELY(sole >= GF_UNLIMITED)) return sole;
  CUdevice dev;
  *err = current_device(&dev);
  return *err == CUDA_SUCCESS ? gf_device_index(dev, err) : GF_UNLIMITED;
}

int gf_nvml_index(nvmlDevice_t dev) {
  typedef nvmlReturn_t (*uuid_fn)(nvmlDevice_t, char*, unsigned int);
  uuid_fn get = (uuid_fn)gf_nvml(GF_nvmlDeviceGetUUID);
  char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {0};
  uint8_t bytes[16];
  if (get == NULL || get(dev, text, sizeof text) != NVML_SUCCESS) return GF_UNLIMITED;
  text[sizeof text - 1] = '\0';
  if (gf_uuid_parse(text, strlen(text), bytes) != 0) return GF_UNLIMITED;
  return gf_config_find(&gf_g.cfg, bytes);
}
