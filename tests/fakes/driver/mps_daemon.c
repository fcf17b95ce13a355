/* The fake MPS control daemon's peers and server (mps_daemon.h). */
#include "mps_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void path_in(const char* dir, const char* name, char* out, size_t len) {
  snprintf(out, len, "%s/%s", dir, name);
}

void mpsd_log(const struct mpsd* d, const char* fmt, ...) {
  char path[PATH_MAX + 16];
  path_in(d->log, "control.log", path, sizeof path);
  FILE* f = fopen(path, "a");
  if (f == NULL) return;
  time_t t = time(NULL);
  struct tm tm;
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
  fprintf(f, "[%s] ", when);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

static int write_text(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

int mpsd_open(struct mpsd* d) {
  char path[PATH_MAX + 32];
  path_in(d->pipe, FAKE_MPS_STATE_FILE, path, sizeof path);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof *d->state) != 0) return perror(path), -1;
  d->state = mmap(NULL, sizeof *d->state, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (d->state == MAP_FAILED) return perror(path), -1;
  d->state->magic = FAKE_MPS_STATE_MAGIC;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if ((size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "%s/" FAKE_MPS_CONTROL, d->pipe) >= sizeof addr.sun_path)
    return fprintf(stderr, "nvidia-cuda-mps-control: pipe directory %s: too long\n", d->pipe), -1;
  unlink(addr.sun_path);
  d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (d->listen_fd < 0 || bind(d->listen_fd, (struct sockaddr*)&addr, sizeof addr) != 0 ||
      listen(d->listen_fd, 16) != 0)
    return perror(addr.sun_path), -1;
  char pid[32];
  snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  path_in(d->pipe, FAKE_MPS_PID_FILE, path, sizeof path);
  if (write_text(path, pid) != 0) return perror(path), -1;
  mpsd_log(d, "Starting control daemon using socket %s (device %s)", addr.sun_path, d->uuid);
  return 0;
}

void mpsd_close(struct mpsd* d) {
  mpsd_server_end(d, "the control daemon quits");
  for (int i = 0; i < d->npeers; i++) close(d->peers[i].fd);
  d->npeers = 0;
  const char* names[] = {FAKE_MPS_CONTROL, FAKE_MPS_STATE_FILE, FAKE_MPS_PID_FILE};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[PATH_MAX + 32];
    path_in(d->pipe, names[i], path, sizeof path);
    unlink(path);
  }
  mpsd_log(d, "Control daemon exits");
}

/* The fake NVML's exclusive-process owner of the device (tests/fakes/cuda/mps.c reads it). */
static void owner_path(const struct mpsd* d, char* out, size_t len) {
  if ((size_t)snprintf(out, len, "%s.exclusive/%s", d->nvml_state, d->uuid) >= len) out[0] = '\0';
}

int mpsd_server_start(struct mpsd* d) {
  if (d->server != 0) return 0;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    prctl(PR_SET_NAME, "nvidia-cuda-mps");
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) pause();
  }
  d->server = pid;
  d->server_pct = d->default_pct;
  d->server_pinned = d->default_pinned;
  d->fault = 0;
  char path[PATH_MAX + 256], text[32];
  snprintf(path, sizeof path, FAKE_MPS_SHM_PREFIX "%d", (int)pid);
  if (write_text(path, "fake MPS server segment\n") != 0) mpsd_log(d, "Server failed to create SHM segment %s", path);
  snprintf(text, sizeof text, "%d\n", (int)pid);
  if (d->nvml_state[0] != '\0') {
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s.exclusive", d->nvml_state);
    mkdir(dir, 0755);
    owner_path(d, path, sizeof path);
    write_text(path, text);
  }
  __atomic_store_n(&d->state->server_pid, (uint32_t)pid, __ATOMIC_SEQ_CST);
  mpsd_log(d, "Starting new server %d for user 0 (active thread percentage %u, pinned limit %llu)", (int)pid,
           d->server_pct, (unsigned long long)d->server_pinned);
  return 0;
}

void mpsd_server_end(struct mpsd* d, const char* why) {
  if (d->server == 0) return;
  char path[PATH_MAX + 256];
  kill(d->server, SIGKILL);
  while (waitpid(d->server, NULL, 0) < 0 && errno == EINTR) {
  }
  snprintf(path, sizeof path, FAKE_MPS_SHM_PREFIX "%d", (int)d->server);
  unlink(path);
  if (d->nvml_state[0] != '\0') {
    owner_path(d, path, sizeof path);
    unlink(path);
  }
  mpsd_log(d, "Server %d exited (%s)", (int)d->server, why);
  d->server = 0;
  d->fault = 0;
  __atomic_store_n(&d->state->server_pid, 0u, __ATOMIC_SEQ_CST);
}

void mpsd_accept(struct mpsd* d) {
  int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return;
  if (d->npeers == MPSD_MAX_PEERS) {
    dprintf(fd, "error too many connections\n");
    close(fd);
    return;
  }
  d->peers[d->npeers++] = (struct mpsd_peer){.fd = fd};
}

static void remove_peer(struct mpsd* d, int i) {
  struct mpsd_peer gone = d->peers[i];
  close(gone.fd);
  d->peers[i] = d->peers[--d->npeers];
  if (!gone.client) return;
  mpsd_log(d, "Client %d disconnected", (int)gone.pid);
  if (!d->fault || d->fault_stays) return;
  for (int j = 0; j < d->npeers; j++)
    if (d->peers[j].affected) return;
  /* Every client the fault reached has exited: the server goes, a fresh one serves the next client. */
  mpsd_server_end(d, "recovered from a fatal fault: all affected clients exited");
}

static void client_hello(struct mpsd* d, struct mpsd_peer* p, const char* args) {
  int pid = 0;
  if (sscanf(args, "%d", &pid) != 1 || pid <= 0) {
    dprintf(p->fd, "error bad client line\n");
    return;
  }
  p->pid = pid;
  p->client = 1;
  if (d->fault) {
    mpsd_log(d, "Client %d refused: the server is in FAULT", pid);
    dprintf(p->fd, "not-ready\n");
    return;
  }
  if (mpsd_server_start(d) != 0) {
    dprintf(p->fd, "error cannot start the server\n");
    return;
  }
  mpsd_log(d, "New client %d connected to server %d", pid, (int)d->server);
  dprintf(p->fd, "ok %d %u %llu %s %llu\n", (int)d->server, d->server_pct, (unsigned long long)d->server_pinned,
          d->uuid, (unsigned long long)__atomic_load_n(&d->state->fault_generation, __ATOMIC_SEQ_CST));
}

static void client_fault(struct mpsd* d, struct mpsd_peer* p) {
  if (d->server == 0) return;
  d->fault = 1;
  for (int j = 0; j < d->npeers; j++) d->peers[j].affected = d->peers[j].client;
  __atomic_add_fetch(&d->state->fault_generation, 1, __ATOMIC_SEQ_CST);
  mpsd_log(d, "Server %d: fatal fault reported by client %d (Xid 31: illegal address); server state FAULT",
           (int)d->server, (int)p->pid);
}

/* Returns 0 to keep the peer, -1 to remove it. */
static int handle_line(struct mpsd* d, int i, char* line) {
  struct mpsd_peer* p = &d->peers[i];
  if (!p->client && strncmp(line, "cmd ", 4) == 0) {
    mpsd_command(d, p->fd, line + 4);
    return -1;
  }
  if (!p->client && strncmp(line, "client ", 7) == 0) {
    client_hello(d, p, line + 7);
    return p->client ? 0 : -1;
  }
  if (p->client && strcmp(line, "fault") == 0) {
    client_fault(d, p);
    return 0;
  }
  return p->client ? 0 : -1;
}

void mpsd_read(struct mpsd* d, int i) {
  struct mpsd_peer* p = &d->peers[i];
  ssize_t n = read(p->fd, p->buf + p->len, sizeof p->buf - 1 - p->len);
  if (n <= 0) {
    if (n < 0 && errno == EINTR) return;
    remove_peer(d, i);
    return;
  }
  p->len += (size_t)n;
  p->buf[p->len] = '\0';
  char* nl;
  while ((nl = strchr(p->buf, '\n')) != NULL) {
    *nl = '\0';
    char line[MPSD_LINE];
    snprintf(line, sizeof line, "%s", p->buf);
    size_t rest = p->len - (size_t)(nl + 1 - p->buf);
    memmove(p->buf, nl + 1, rest + 1);
    p->len = rest;
    if (handle_line(d, i, line) != 0) {
      remove_peer(d, i);
      return;
    }
  }
  if (p->len == sizeof p->buf - 1) remove_peer(d, i); /* a line too long */
}
