/* Process names and liveness across PID namespaces in the simulated driver's files (procname.h). */
#include "procname.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drvlimit.h"

static int g_live_fd = -1;
static pid_t g_live_pid;

unsigned long long fake_pidns_of(const char* pid) {
  char path[64];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%s/ns/pid", pid);
  return stat(path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

unsigned long long fake_host_pidns(const char* state) {
  char path[4200];
  unsigned long long ino = 0;
  snprintf(path, sizeof path, "%s.pidns", state);
  FILE* f = fopen(path, "re");
  if (f != NULL && fscanf(f, "%llu", &ino) != 1) ino = 0;
  if (f != NULL) fclose(f);
  return ino;
}

/* The name of a process whose pid in its own namespace is nspid, in namespace ino. */
static void name_in(const char* state, long nspid, unsigned long long ino, char* out, size_t len) {
  const unsigned long long host = fake_host_pidns(state);
  if (host == 0 || ino == host || ino == 0)
    snprintf(out, len, "%ld", nspid);
  else
    snprintf(out, len, "%ld@%llu", nspid, ino);
}

void fake_self_name(const char* state, char* out, size_t len) {
  name_in(state, (long)getpid(), fake_pidns_of("self"), out, len);
}

/* The last NSpid field of /proc/<pid>/status: the pid in its own namespace; 0 when unknown. */
static long own_ns_pid(int pid) {
  char path[64], line[512];
  long last = 0;
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE* f = fopen(path, "re");
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "NSpid:", 6) != 0) continue;
    for (char *p = line + 6, *end; (last = strtol(p, &end, 10), end != p); p = end) {
    }
    break;
  }
  if (f != NULL) fclose(f);
  return last;
}

void fake_name_of_pid(const char* state, int pid, char* out, size_t len) {
  char s[16];
  snprintf(s, sizeof s, "%d", pid);
  const unsigned long long ino = fake_pidns_of(s);
  const long nspid = own_ns_pid(pid);
  name_in(state, ino == fake_pidns_of("self") || nspid == 0 ? pid : nspid, ino, out, len);
}

/* A fork child holds its parent's description: it closes its copy and takes its own at its next write. */
static void live_forked(void) {
  if (g_live_fd >= 0) close(g_live_fd);
  g_live_fd = -1;
}

static void register_fork(void) {
  pthread_atfork(NULL, NULL, live_forked);
}

void fake_live_lock(const char* dir, const char* name) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (g_live_fd >= 0 && g_live_pid == getpid()) return;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.live", dir, name);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return;
  fchmod(fd, 0666);
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  if (fcntl(fd, F_OFD_SETLK, &l) != 0) {
    close(fd);
    return;
  }
  g_live_fd = fd, g_live_pid = getpid();
  pthread_once(&once, register_fork);
}

/* Whether someone holds the ".live" lock of name in dir. */
static int live_locked(const char* dir, const char* name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.live", dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  const int held = fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
  close(fd);
  return held;
}

/* Whether the process named is of the caller's PID namespace (a "<pid>" name is the host's). */
static int same_ns(const char* state, const char* name) {
  const char* at = strchr(name, '@');
  const unsigned long long own = fake_pidns_of("self"), host = fake_host_pidns(state);
  return at != NULL ? strtoull(at + 1, NULL, 10) == own : host == 0 || host == own;
}

int fake_name_alive(const char* state, const char* dir, const char* name, unsigned long long start) {
  if (!same_ns(state, name)) return live_locked(dir, name);
  char pid[FAKE_NAME_MAX];
  snprintf(pid, sizeof pid, "%.*s", (int)strcspn(name, "@"), name);
  return start != 0 && fake_start_time(pid) == start;
}

long fake_name_local_pid(const char* state, const char* name) {
  return same_ns(state, name) ? atol(name) : 0;
}
