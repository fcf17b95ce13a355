/* A fake nvidia-cuda-mps-control for simulated nodes (README.md here): `-d` starts the control
 * daemon in the background (returning once it listens), `-f` in the foreground, and without either
 * it is the control shell: each line of stdin is sent to the running daemon and its answer printed.
 * The daemon serves the one GPU of CUDA_VISIBLE_DEVICES (a UUID, as gpufrac starts it), keeps its
 * files in CUDA_MPS_PIPE_DIRECTORY and logs to CUDA_MPS_LOG_DIRECTORY/control.log. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mps_daemon.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static const char* env_or(const char* name, const char* fallback) {
  const char* v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : fallback;
}

static int connect_control(const char* pipe) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s/" FAKE_MPS_CONTROL, pipe);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr*)&addr, sizeof addr) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

/* The control shell: one connection per command line. */
static int shell(const char* pipe) {
  char line[MPSD_LINE];
  while (fgets(line, sizeof line, stdin) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '\0') continue;
    int fd = connect_control(pipe);
    if (fd < 0) {
      fprintf(stderr, "Cannot find MPS control daemon process\n");
      return 1;
    }
    dprintf(fd, "cmd %s\n", line);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)n, stdout);
    close(fd);
  }
  return 0;
}

static void serve(struct mpsd* d) {
  while (!d->quit && !g_stop) {
    struct pollfd fds[MPSD_MAX_PEERS + 1];
    fds[0] = (struct pollfd){.fd = d->listen_fd, .events = POLLIN};
    for (int i = 0; i < d->npeers; i++) fds[i + 1] = (struct pollfd){.fd = d->peers[i].fd, .events = POLLIN};
    const int count = d->npeers;
    if (poll(fds, (nfds_t)count + 1, 1000) < 0) continue;
    for (int i = count; i-- > 0;) /* from the end: removing peer i moves the last one into place i */
      if (fds[i + 1].revents != 0 && i < d->npeers && d->peers[i].fd == fds[i + 1].fd) mpsd_read(d, i);
    if (fds[0].revents & POLLIN) mpsd_accept(d);
  }
  mpsd_close(d);
}

static int setup(struct mpsd* d) {
  memset(d, 0, sizeof *d);
  snprintf(d->pipe, sizeof d->pipe, "%s", env_or("CUDA_MPS_PIPE_DIRECTORY", FAKE_MPS_DEFAULT_PIPE));
  snprintf(d->log, sizeof d->log, "%s", env_or("CUDA_MPS_LOG_DIRECTORY", FAKE_MPS_DEFAULT_LOG));
  snprintf(d->uuid, sizeof d->uuid, "%s", env_or("CUDA_VISIBLE_DEVICES", "0"));
  snprintf(d->nvml_state, sizeof d->nvml_state, "%s", env_or("GPUFRAC_FAKE_NVML_STATE", ""));
  const int pct = atoi(env_or("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100"));
  d->default_pct = pct > 0 && pct <= 100 ? (unsigned)pct : 100;
  d->fault_stays = strcmp(env_or("GPUFRAC_FAKE_MPS_FAULT_STAYS", "0"), "1") == 0;
  mkdir(d->pipe, 0755);
  mkdir(d->log, 0755);
  int probe = connect_control(d->pipe);
  if (probe >= 0) {
    close(probe);
    fprintf(stderr, "An instance of this daemon is already running\n");
    return -1;
  }
  return mpsd_open(d);
}

/* -d: the daemon runs in a child of its own session; the parent returns once it listens. */
static int daemonize(struct mpsd* d) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return perror("pipe"), 1;
  pid_t pid = fork();
  if (pid < 0) return perror("fork"), 1;
  if (pid > 0) {
    close(ready[1]);
    char ok = 0;
    return read(ready[0], &ok, 1) == 1 && ok == 'y' ? 0 : 1;
  }
  close(ready[0]);
  setsid();
  if (setup(d) != 0) _exit(1);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0), dup2(null, 1), dup2(null, 2);
    if (null > 2) close(null);
  }
  if (write(ready[1], "y", 1) != 1) _exit(1);
  close(ready[1]);
  serve(d);
  _exit(0);
}

int main(int argc, char** argv) {
  static struct mpsd d;
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  if (argc == 1) return shell(env_or("CUDA_MPS_PIPE_DIRECTORY", FAKE_MPS_DEFAULT_PIPE));
  if (argc == 2 && strcmp(argv[1], "-d") == 0) return daemonize(&d);
  if (argc == 2 && strcmp(argv[1], "-f") == 0) {
    if (setup(&d) != 0) return 1;
    serve(&d);
    return 0;
  }
  fprintf(stderr, "usage: nvidia-cuda-mps-control [-d | -f]   (without either: commands on stdin)\n");
  return 2;
}
