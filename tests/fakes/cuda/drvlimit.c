/* The driver's per-cgroup memory limits (drvlimit.h). libc only, like the rest of the fake. */
#include "drvlimit.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "procname.h"

#define FAKE_PATH 4096

static char g_cgroup[FAKE_PATH];         /* this process's "0::" path; "" when it has none */
static unsigned long long g_start;       /* this process's start time (field 22 of /proc/self/stat) */
static int g_recorded[FAKE_MAX_DEVICES]; /* a usage line was written for the device */
static int g_swapped;                    /* checkpointed: the driver's view of it holds nothing */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static const char* state_file(void) {
  const char* s = getenv("GPUFRAC_FAKE_NVML_STATE");
  return s != NULL && *s != '\0' && g_cgroup[0] != '\0' ? s : NULL;
}

/* Field 22 of /proc/<pid>/stat (pid "self" for this process), 0 when it cannot be read or the
 * process is a zombie (the driver frees a process's memory as it exits, before it is reaped). */
static unsigned long long start_time(const char* pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  FILE* f = fopen(path, "re");
  if (f == NULL) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char* p = strrchr(buf, ')');
  if (p != NULL && (p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')) return 0;
  for (int field = 2; p != NULL && field < 22; field++) p = strchr(p + 1, ' ');
  return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

static void init_identity(void) {
  FILE* f = fopen("/proc/self/cgroup", "re");
  char line[FAKE_PATH];
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "0::", 3) != 0) continue;
    line[strcspn(line, "\n")] = '\0';
    snprintf(g_cgroup, sizeof g_cgroup, "%s", line + 3);
  }
  if (f != NULL) fclose(f);
  g_start = start_time("self");
}

/* The limits on uuid for cgroup (0 and 0 when none); returns the hard limit. */
static uint64_t limits_of(const char* state, const char* uuid, const char* cgroup, uint64_t* soft_out) {
  char path[FAKE_PATH + 16], line[FAKE_PATH + 128];
  snprintf(path, sizeof path, "%s.limits", state);
  FILE* f = fopen(path, "re");
  uint64_t hard = 0, soft = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    char id[64];
    unsigned long long s, h;
    int used = 0;
    line[strcspn(line, "\n")] = '\0';
    if (sscanf(line, "%63s %llu %llu %n", id, &s, &h, &used) == 3 && used > 0 && strcmp(id, uuid) == 0 &&
        strcmp(line + used, cgroup) == 0)
      hard = h, soft = s;
  }
  if (f != NULL) fclose(f);
  if (soft_out != NULL) *soft_out = soft;
  return hard;
}

/* The hard limit on uuid for this process's cgroup, 0 when none. */
static uint64_t hard_limit(const char* state, const char* uuid) {
  return limits_of(state, uuid, g_cgroup, NULL);
}

/* What the other live processes hold on a device: those of this cgroup, and all of them. */
struct held {
  uint64_t group, node;
};

/* An entry of the usage directory that names a process (not a ".tmp" or ".live" file), other than
 * this process's own name. */
static int other_entry(const char* name, const char* self) {
  return name[0] >= '0' && name[0] <= '9' && strchr(name, '.') == NULL && strcmp(name, self) != 0;
}

/* What the live process an entry names holds on uuid (0 when none, or when it is dead), with its
 * cgroup. */
static uint64_t entry_use(const char* state, const char* dir, const char* name, const char* uuid, char* group,
                          size_t group_len) {
  char file[2 * FAKE_PATH], line[FAKE_PATH + 128];
  unsigned long long start = 0, bytes = 0, b;
  snprintf(file, sizeof file, "%s/%s", dir, name);
  FILE* f = fopen(file, "re");
  group[0] = '\0';
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    char id[64];
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "cgroup ", 7) == 0) snprintf(group, group_len, "%s", line + 7);
    sscanf(line, "start %llu", &start);
    if (sscanf(line, "used %63s %llu", id, &b) == 2 && strcmp(id, uuid) == 0) bytes = b;
  }
  if (f != NULL) fclose(f);
  return bytes != 0 && fake_name_alive(state, dir, name, start) ? bytes : 0;
}

static struct held others_held(const char* state, const char* uuid) {
  char dir[FAKE_PATH + 16], self[FAKE_NAME_MAX], group[FAKE_PATH + 128];
  snprintf(dir, sizeof dir, "%s.usage", state);
  fake_self_name(state, self, sizeof self);
  DIR* d = opendir(dir);
  struct held sum = {0, 0};
  for (struct dirent* e = d != NULL ? readdir(d) : NULL; e != NULL; e = readdir(d)) {
    if (!other_entry(e->d_name, self)) continue;
    const uint64_t bytes = entry_use(state, dir, e->d_name, uuid, group, sizeof group);
    sum.node += bytes;
    if (strcmp(group, g_cgroup) == 0) sum.group += bytes;
  }
  if (d != NULL) closedir(d);
  return sum;
}

/* Rewrites this process's usage file with dev at `held` (the other devices as recorded). Called with
 * the allocation registry's lock held (memory.c). */
static void write_usage(const char* state, CUdevice dev, uint64_t held) {
  char dir[FAKE_PATH + 16], file[FAKE_PATH + 48 + FAKE_NAME_MAX], tmp[FAKE_PATH + 64 + FAKE_NAME_MAX];
  char name[FAKE_NAME_MAX];
  snprintf(dir, sizeof dir, "%s.usage", state);
  mkdir(dir, 0755);
  chmod(dir, 0777); /* processes of other users and namespaces write theirs */
  fake_self_name(state, name, sizeof name);
  fake_live_lock(dir, name);
  snprintf(file, sizeof file, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", file);
  FILE* f = fopen(tmp, "we");
  if (f == NULL) return;
  fprintf(f, "start %llu\ncgroup %s\n", g_start, g_cgroup);
  if (dev >= 0) g_recorded[dev] = 1;
  for (int i = 0; i < fake_device_count; i++) {
    /* the caller holds the registry's lock (or the process is locked): read used directly */
    const uint64_t bytes = g_swapped ? 0 : i == dev ? held : fake_devices[i].used;
    if (g_recorded[i]) fprintf(f, "used %s %llu\n", fake_devices[i].uuid, (unsigned long long)bytes);
  }
  if (fclose(f) == 0) rename(tmp, file);
}

static int lock_state(const char* state) {
  char path[FAKE_PATH + 16];
  snprintf(path, sizeof path, "%s.lock", state);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) flock(fd, LOCK_EX);
  return fd;
}

static void unlock_state(int fd) {
  if (fd >= 0) close(fd); /* closing drops the flock */
}

/* ---- The eviction of an over-soft process (r615 under MPS: GPUFRAC_FAKE_CUDA_MPS_EVICTION=1) ---- */
#define FAKE_GROUPS 64
struct group_use {
  char cgroup[FAKE_PATH + 128];
  uint64_t used, top_bytes;
  long top_pid;
};

/* Every other live process's use on uuid, summed by cgroup (the largest process of each kept, by the
 * pid the caller can signal: 0 for a process of another PID namespace). */
static int group_uses(const char* state, const char* uuid, struct group_use* out) {
  char dir[FAKE_PATH + 16], self[FAKE_NAME_MAX], group[FAKE_PATH + 128];
  snprintf(dir, sizeof dir, "%s.usage", state);
  fake_self_name(state, self, sizeof self);
  DIR* d = opendir(dir);
  int n = 0;
  for (struct dirent* e = d != NULL ? readdir(d) : NULL; e != NULL; e = readdir(d)) {
    if (!other_entry(e->d_name, self)) continue;
    uint64_t bytes = entry_use(state, dir, e->d_name, uuid, group, sizeof group);
    if (bytes == 0) continue;
    int i = 0;
    while (i < n && strcmp(out[i].cgroup, group) != 0) i++;
    if (i == n && n == FAKE_GROUPS) continue;
    if (i == n) memset(&out[n++], 0, sizeof out[0]), snprintf(out[i].cgroup, sizeof out[i].cgroup, "%s", group);
    out[i].used += bytes;
    if (bytes > out[i].top_bytes) out[i].top_bytes = bytes, out[i].top_pid = fake_name_local_pid(state, e->d_name);
  }
  if (d != NULL) closedir(d);
  return n;
}

/* The process to evict for a requester within its soft limit: the largest process of the cgroup
 * furthest past its own soft limit (a cgroup without a limit has soft 0); 0 when none is past. */
static long over_soft_victim(const char* state, const char* uuid) {
  static struct group_use groups[FAKE_GROUPS];
  int n = group_uses(state, uuid, groups);
  long victim = 0;
  uint64_t worst = 0;
  for (int i = 0; i < n; i++) {
    uint64_t soft = 0;
    limits_of(state, uuid, groups[i].cgroup, &soft);
    if (strcmp(groups[i].cgroup, g_cgroup) == 0 || groups[i].used <= soft) continue;
    if (groups[i].used - soft > worst) worst = groups[i].used - soft, victim = groups[i].top_pid;
  }
  return victim;
}

/* Whether the requester may have an over-soft process evicted: MPS eviction on, and its cgroup
 * within its soft limit with the new bytes. */
static int may_evict(const char* state, const char* uuid, uint64_t group_after) {
  const char* on = getenv("GPUFRAC_FAKE_CUDA_MPS_EVICTION");
  uint64_t soft = 0;
  if (on == NULL || strcmp(on, "1") != 0) return 0;
  limits_of(state, uuid, g_cgroup, &soft);
  return soft != 0 && group_after <= soft;
}

/* Kills pid and waits (at most 5 s) until it holds nothing (gone or a zombie). */
static void evict(long pid) {
  char name[32];
  snprintf(name, sizeof name, "%ld", pid);
  kill((pid_t)pid, SIGKILL);
  for (int i = 0; i < 500 && start_time(name) != 0; i++) usleep(10000);
}

CUresult fake_limit_charge(CUdevice dev, uint64_t held, uint64_t size) {
  pthread_once(&g_once, init_identity);
  const char* state = state_file();
  if (state == NULL || dev < 0) return CUDA_SUCCESS;
  const char* uuid = fake_devices[dev].uuid;
  for (int round = 0;; round++) {
    int fd = lock_state(state);
    uint64_t hard = hard_limit(state, uuid);
    struct held others = others_held(state, uuid);
    const int over_hard = hard != 0 && others.group + held + size > hard;
    const int full = others.node + held + size > fake_devices[dev].total; /* the GPU is full */
    if (!over_hard && !full) {
      write_usage(state, dev, held + size);
      unlock_state(fd);
      return CUDA_SUCCESS;
    }
    long victim = !over_hard && round < 8 && may_evict(state, uuid, others.group + held + size)
                      ? over_soft_victim(state, uuid)
                      : 0;
    unlock_state(fd);
    if (victim == 0) return CUDA_ERROR_OUT_OF_MEMORY;
    evict(victim);
  }
}

void fake_limit_release(CUdevice dev, uint64_t held) {
  /* Every process's use is recorded (the driver's per-process view); g_recorded says it has one. */
  pthread_once(&g_once, init_identity);
  const char* state = state_file();
  if (state == NULL || dev < 0 || !g_recorded[dev]) return;
  int fd = lock_state(state);
  write_usage(state, dev, held);
  unlock_state(fd);
}

int fake_limit_info(CUdevice dev, uint64_t held, uint64_t* hard, uint64_t* used) {
  pthread_once(&g_once, init_identity);
  const char* state = state_file();
  if (state == NULL || dev < 0) return 0;
  int fd = lock_state(state);
  const uint64_t total = fake_devices[dev].total, limit = hard_limit(state, fake_devices[dev].uuid);
  struct held others = others_held(state, fake_devices[dev].uuid);
  unlock_state(fd);
  /* free = min(limit - the cgroup's use, total - the GPU's use); total shown = min(limit, total). */
  const uint64_t shown = limit != 0 && limit < total ? limit : total;
  const uint64_t group = others.group + held, node = others.node + held;
  uint64_t free_b = node < total ? total - node : 0;
  if (limit != 0 && (group >= limit || limit - group < free_b)) free_b = group < limit ? limit - group : 0;
  *hard = shown;
  *used = shown - (free_b < shown ? free_b : shown);
  return 1;
}

unsigned long long fake_start_time(const char* pid) {
  return start_time(pid);
}

void fake_limit_swap_out(void) {
  pthread_once(&g_once, init_identity);
  const char* state = state_file();
  g_swapped = 1;
  if (state == NULL) return;
  int fd = lock_state(state);
  write_usage(state, -1, 0);
  unlock_state(fd);
}

/* Whether what the process holds on dev fits again: the GPU's memory and its cgroup's hard limit. */
static int fits_again(const char* state, int dev) {
  const uint64_t held = fake_devices[dev].used, hard = hard_limit(state, fake_devices[dev].uuid);
  struct held others = others_held(state, fake_devices[dev].uuid);
  return others.node + held <= fake_devices[dev].total && (hard == 0 || others.group + held <= hard);
}

CUresult fake_limit_swap_in(void) {
  pthread_once(&g_once, init_identity);
  const char* state = state_file();
  if (state == NULL) return g_swapped = 0, CUDA_SUCCESS;
  int fd = lock_state(state);
  for (int i = 0; i < fake_device_count; i++) {
    if (fake_devices[i].used != 0 && !fits_again(state, i)) {
      unlock_state(fd);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  g_swapped = 0;
  write_usage(state, -1, 0);
  unlock_state(fd);
  return CUDA_SUCCESS;
}
