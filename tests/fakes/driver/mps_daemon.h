/* The fake MPS control daemon's state and what it does with each peer (mps_daemon.c, commands in
 * mps_commands.c); mps_control.c runs the loop. README.md here says what it models. */
#ifndef GPUFRAC_FAKE_MPS_DAEMON_H
#define GPUFRAC_FAKE_MPS_DAEMON_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fake_mps.h"

#define MPSD_MAX_PEERS 64
#define MPSD_LINE 512

struct mpsd_peer {
  int fd;
  pid_t pid;    /* a CUDA client's pid; 0 until its first line */
  int client;   /* 1: a CUDA client (stays connected) */
  int affected; /* connected when the server faulted */
  char buf[MPSD_LINE];
  size_t len;
};

struct mpsd {
  char pipe[PATH_MAX], log[PATH_MAX], uuid[128], nvml_state[PATH_MAX];
  int listen_fd;
  struct fake_mps_state* state;
  unsigned default_pct;    /* for servers started from now on */
  uint64_t default_pinned; /* bytes, 0 = none; for servers started from now on */
  pid_t server;            /* 0: none running */
  unsigned server_pct;
  uint64_t server_pinned;
  int fault;       /* the server is in FAULT */
  int fault_stays; /* GPUFRAC_FAKE_MPS_FAULT_STAYS=1: a FAULT outlives its clients (a wedged server) */
  struct mpsd_peer peers[MPSD_MAX_PEERS];
  int npeers;
  int quit;
};

/* Opens the pipe directory's files (socket, state, pid file); 0 or -1 with a line on stderr. */
int mpsd_open(struct mpsd* d);
/* Ends the server and removes the pipe directory's files. */
void mpsd_close(struct mpsd* d);
void mpsd_accept(struct mpsd* d);
/* Reads what peer i sent and acts on each whole line; the peer may be removed. */
void mpsd_read(struct mpsd* d, int i);
void mpsd_log(const struct mpsd* d, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* The answer to one control command (mps_commands.c), written to fd. */
void mpsd_command(struct mpsd* d, int fd, const char* line);
/* Starts the server (if none) / ends it. */
int mpsd_server_start(struct mpsd* d);
void mpsd_server_end(struct mpsd* d, const char* why);

#endif /* GPUFRAC_FAKE_MPS_DAEMON_H */
