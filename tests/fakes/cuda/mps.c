/* The fake libcuda's MPS client (mps.h). */
#include "mps.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../driver/fake_mps.h"
#include "fake_cuda.h"

static int g_fd = -1;      /* the connection to the daemon, open for the process's life */
static int g_served = -1;  /* the device ordinal the server runs, -1: not a client */
static unsigned g_percent; /* this client's SM cap */
static uint64_t g_pinned[FAKE_MAX_DEVICES];
static const struct fake_mps_state* g_state;
static uint64_t g_generation;          /* the server's fault generation when this client connected */
static int g_faulted;                  /* sticky */
static long g_fault_after, g_launches; /* GPUFRAC_FAKE_CUDA_MPS_FAULT */

static const char* env_or(const char* name, const char* fallback) {
  const char* v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : fallback;
}

/* "<n>[K|M|G][B]" -> bytes; 0 when malformed. */
static uint64_t parse_size(const char* s, const char* end) {
  char* e = NULL;
  unsigned long long v = strtoull(s, &e, 10);
  if (e == s) return 0;
  uint64_t unit = 1;
  if (e < end && (*e == 'K' || *e == 'M' || *e == 'G'))
    unit = *e == 'K' ? 1ull << 10 : *e == 'M' ? 1ull << 20 : 1ull << 30, e++;
  if (e < end && *e == 'B') e++;
  return e == end ? v * unit : 0;
}

/* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT lowers the server's limit per device (ordinal or UUID). */
static void client_pinned_limits(void) {
  const char* list = getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  for (const char* p = list; p != NULL && *p != '\0';) {
    const char* comma = strchr(p, ',');
    const char* end = comma != NULL ? comma : p + strlen(p);
    const char* eq = memchr(p, '=', (size_t)(end - p));
    uint64_t v = eq != NULL ? parse_size(eq + 1, end) : 0;
    for (int d = 0; eq != NULL && v != 0 && d < fake_device_count; d++) {
      char ordinal[16];
      snprintf(ordinal, sizeof ordinal, "%d", d);
      size_t n = (size_t)(eq - p);
      int named = (strlen(ordinal) == n && strncmp(p, ordinal, n) == 0) ||
                  (strlen(fake_devices[d].uuid) == n && strncmp(p, fake_devices[d].uuid, n) == 0);
      if (named && (g_pinned[d] == 0 || v < g_pinned[d])) g_pinned[d] = v;
    }
    if (eq == NULL || v == 0)
      fprintf(stderr,
              "fake libcuda: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: bad entry \"%.*s\"; accepted: <device>=<n>M or G\n",
              (int)(end - p), p);
    p = comma != NULL ? comma + 1 : end;
  }
}

static int connect_daemon(const char* pipe) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if ((size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "%s/" FAKE_MPS_CONTROL, pipe) >= sizeof addr.sun_path)
    return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) == 0) return fd;
  close(fd);
  return -1;
}

static int read_line(int fd, char* buf, size_t len) {
  size_t n = 0;
  while (n + 1 < len) {
    ssize_t r = read(fd, buf + n, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    if (buf[n] == '\n') break;
    n++;
  }
  buf[n] = '\0';
  return 0;
}

/* The server's answer "ok <server pid> <percent> <pinned> <uuid> <generation>" taken on. */
static CUresult accept_server(const char* pipe, const char* answer) {
  int server = 0;
  unsigned percent = 100;
  unsigned long long pinned = 0, generation = 0;
  char uuid[96] = "";
  if (sscanf(answer, "ok %d %u %llu %95s %llu", &server, &percent, &pinned, uuid, &generation) != 5)
    return CUDA_ERROR_MPS_CONNECTION_FAILED;
  char path[4200];
  snprintf(path, sizeof path, FAKE_MPS_SHM_PREFIX "%d", server);
  if (access(path, F_OK) != 0) {
    fprintf(stderr,
            "fake libcuda: MPS client: the server's shared memory %s is not visible (the server's shm "
            "directory is not this process's /dev/shm)\n",
            path);
    return CUDA_ERROR_MPS_CONNECTION_FAILED;
  }
  snprintf(path, sizeof path, "%s/" FAKE_MPS_STATE_FILE, pipe);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  void* state = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof *g_state, PROT_READ, MAP_SHARED, fd, 0);
  if (fd >= 0) close(fd);
  if (state == MAP_FAILED) return CUDA_ERROR_MPS_CONNECTION_FAILED;
  g_state = state;
  g_generation = generation;
  const unsigned mine = (unsigned)atoi(env_or("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "0"));
  g_percent = mine > 0 && mine < percent ? mine : percent; /* the client's value only lowers */
  for (int d = 0; d < fake_device_count; d++)
    if (strcmp(fake_devices[d].uuid, uuid) == 0) g_served = d;
  if (g_served >= 0) g_pinned[g_served] = pinned;
  return CUDA_SUCCESS;
}

CUresult fake_mps_init(void) {
  g_fault_after = atol(env_or("GPUFRAC_FAKE_CUDA_MPS_FAULT", "0"));
  const char* pipe = env_or("CUDA_MPS_PIPE_DIRECTORY", FAKE_MPS_DEFAULT_PIPE);
  int fd = connect_daemon(pipe);
  if (fd < 0) return CUDA_SUCCESS; /* no daemon: not an MPS client */
  char line[256];
  if (dprintf(fd, "client %d %d\n", (int)getpid(), (int)getuid()) < 0 || read_line(fd, line, sizeof line) != 0) {
    close(fd);
    return CUDA_ERROR_MPS_CONNECTION_FAILED;
  }
  CUresult rc = strcmp(line, "not-ready") == 0 ? CUDA_ERROR_MPS_SERVER_NOT_READY : accept_server(pipe, line);
  if (rc != CUDA_SUCCESS) {
    close(fd);
    return rc;
  }
  g_fd = fd;
  client_pinned_limits();
  if (g_served >= 0) fake_gpu_client_mps((unsigned)g_served, g_percent);
  return CUDA_SUCCESS;
}

static unsigned compute_mode(const char* uuid) {
  const char* state = getenv("GPUFRAC_FAKE_NVML_STATE");
  char path[4200], line[256], id[128];
  unsigned mode = 0, found = 0;
  if (state == NULL || state[0] == '\0') return 0;
  snprintf(path, sizeof path, "%s.compute-mode", state);
  FILE* f = fopen(path, "re");
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "%127s %u", id, &mode) == 2 && strcmp(id, uuid) == 0) found = mode;
  if (f != NULL) fclose(f);
  return found;
}

/* EXCLUSIVE_PROCESS: the first live process holds the GPU (the MPS server, when one runs). */
static CUresult claim_exclusive(const char* uuid) {
  char path[4300], text[32] = "";
  snprintf(path, sizeof path, "%s.exclusive", getenv("GPUFRAC_FAKE_NVML_STATE"));
  mkdir(path, 0755);
  snprintf(path + strlen(path), sizeof path - strlen(path), "/%s", uuid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    int owner = n > 0 ? atoi(text) : 0;
    if (owner > 0 && owner != (int)getpid() && (kill(owner, 0) == 0 || errno == EPERM))
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
  }
  snprintf(text, sizeof text, "%d\n", (int)getpid());
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!write(fd, text, strlen(text));
    close(fd);
  }
  return CUDA_SUCCESS;
}

CUresult fake_mps_context(CUdevice dev) {
  if (dev == g_served) return CUDA_SUCCESS; /* an MPS client: the server holds the GPU */
  const unsigned mode = compute_mode(fake_devices[dev].uuid);
  if (mode == 2) return CUDA_ERROR_DEVICE_UNAVAILABLE; /* PROHIBITED */
  return mode == 3 ? claim_exclusive(fake_devices[dev].uuid) : CUDA_SUCCESS;
}

CUresult fake_mps_charge(CUdevice dev, uint64_t used, uint64_t size) {
  if (g_fd < 0 || dev < 0 || dev >= FAKE_MAX_DEVICES || g_pinned[dev] == 0) return CUDA_SUCCESS;
  return size > g_pinned[dev] || used > g_pinned[dev] - size ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult fake_mps_launch(void) {
  if (g_fd < 0) return CUDA_SUCCESS;
  if (__atomic_load_n(&g_faulted, __ATOMIC_RELAXED)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (g_fault_after > 0 && __atomic_add_fetch(&g_launches, 1, __ATOMIC_RELAXED) == g_fault_after) {
    (void)!write(g_fd, "fault\n", 6);
    __atomic_store_n(&g_faulted, 1, __ATOMIC_RELAXED);
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  if (__atomic_load_n(&g_state->fault_generation, __ATOMIC_ACQUIRE) != g_generation) {
    __atomic_store_n(&g_faulted, 1, __ATOMIC_RELAXED);
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_SUCCESS;
}
