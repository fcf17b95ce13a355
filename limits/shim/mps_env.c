/* SM shares (docs/architecture.md "SM sharing"): every process of a container whose limit file has an
 * "mps <uuid> <percent>" line starts as an MPS client of that GPU's server with the container's cap,
 * whatever environment it was started with (an exec'd shell that dropped it, a container made by a
 * front-end that cannot set the environment: an OCI hook). Before main, and so before any cuInit:
 *   CUDA_MPS_PIPE_DIRECTORY            GPUFRAC_CONTAINER_MPS_PIPE, unless set
 *   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE  the share's percent, unless set lower (a client may only lower it)
 *   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT   <uuid>=<the device line's limit in MiB>M, unless set lower for
 *                                      this GPU alone (<uuid or 0>=<n>M or <n>G); any other value,
 *                                      a higher one included, is replaced: the lower of the two wins
 * A container without an SM share pays one access() for it (its gpufrac directory has no mps/). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpufrac/limits_abi.h"

#define GF_MPS_TEXT 4096

static void set_lowered_percent(unsigned percent) {
  const char* now = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  char* end = NULL;
  const unsigned long have = now != NULL ? strtoul(now, &end, 10) : 0;
  if (now != NULL && end != now && *end == '\0' && have > 0 && have <= percent) return;
  char text[16];
  snprintf(text, sizeof text, "%u", percent);
  setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", text, 1);
}

/* The MiB a CUDA_MPS_PINNED_DEVICE_MEM_LIMIT value gives `uuid` (the container's one GPU, also
 * "0" inside it) when it is one entry in MiB or GiB; 0 for any other form. */
static unsigned long long pinned_mib(const char* value, const char* uuid) {
  const char* eq = strchr(value, '=');
  if (eq == NULL) return 0;
  const size_t key = (size_t)(eq - value);
  if (!((key == 1 && value[0] == '0') || (key == strlen(uuid) && strncmp(value, uuid, key) == 0))) return 0;
  char* end = NULL;
  const unsigned long long n = strtoull(eq + 1, &end, 10);
  if (end == eq + 1 || n == 0 || n > (1ull << 30) || end[0] == '\0' || end[1] != '\0') return 0;
  return end[0] == 'M' ? n : end[0] == 'G' ? n << 10 : 0;
}

static void set_lowered_limit(const char* uuid, unsigned long long mib) {
  const char* now = getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  const unsigned long long have = now != NULL ? pinned_mib(now, uuid) : 0;
  if (have > 0 && have <= mib) return;
  char value[GPUFRAC_UUID_SIZE + 32];
  snprintf(value, sizeof value, "%s=%lluM", uuid, mib);
  setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", value, 1);
}

/* The limit of `uuid`'s device line, 0 when there is none. */
static unsigned long long device_limit(const char* text, const char* uuid) {
  char key[16], id[GPUFRAC_UUID_SIZE];
  unsigned long long bytes = 0;
  for (const char* line = text; line != NULL && *line != '\0';
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
    if (sscanf(line, "%15s %95s %llu", key, id, &bytes) == 3 && strcmp(key, "device") == 0 && strcmp(id, uuid) == 0)
      return bytes;
  return 0;
}

static void apply(const char* text) {
  char key[16], uuid[GPUFRAC_UUID_SIZE];
  unsigned percent = 0;
  for (const char* line = text; line != NULL && *line != '\0';
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (sscanf(line, "%15s %95s %u", key, uuid, &percent) != 3 || strcmp(key, "mps") != 0 || percent == 0 ||
        percent > 100)
      continue;
    setenv("CUDA_MPS_PIPE_DIRECTORY", GPUFRAC_CONTAINER_MPS_PIPE, 0);
    set_lowered_percent(percent);
    const unsigned long long limit = device_limit(text, uuid);
    if (limit >= (1ull << 20)) set_lowered_limit(uuid, limit >> 20);
    return; /* an SM share is its container's only GPU */
  }
}

__attribute__((constructor)) static void gf_mps_env(void) {
  if (access(GPUFRAC_CONTAINER_MPS_PIPE, F_OK) != 0) return;
  int fd = open(GPUFRAC_CONTAINER_LIMITS, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char text[GF_MPS_TEXT + 1];
  ssize_t n = read(fd, text, GF_MPS_TEXT);
  close(fd);
  if (n <= 0) return;
  text[n] = '\0';
  apply(text);
}
