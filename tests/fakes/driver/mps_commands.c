/* The fake MPS control daemon's control commands (the "v2" shell the MPS guide documents; the
 * subset gpufrac and its tests use). Every command is logged to control.log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mps_daemon.h"

/* "10G", "512M" (optionally with a trailing B) -> bytes; 0 on a malformed value. */
static uint64_t parse_limit(const char* text) {
  char* end = NULL;
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text) return 0;
  uint64_t unit = *end == 'G' ? 1ull << 30 : *end == 'M' ? 1ull << 20 : 0;
  if (unit == 0 || (end[1] != '\0' && strcmp(end + 1, "B") != 0)) return 0;
  return v * unit;
}

/* The device argument: an ordinal (the daemon sees one device, 0) or its UUID. */
static int our_device(const struct mpsd* d, const char* dev) {
  return strcmp(dev, "0") == 0 || strcmp(dev, d->uuid) == 0;
}

static void list_clients(const struct mpsd* d, int fd, int ps) {
  if (ps) dprintf(fd, "PID SERVER DEVICE NAMESPACE COMMAND\n");
  for (int i = 0; i < d->npeers; i++) {
    const struct mpsd_peer* p = &d->peers[i];
    if (!p->client || d->server == 0) continue;
    if (!ps) {
      dprintf(fd, "%d\n", (int)p->pid);
      continue;
    }
    char path[64], comm[64] = "?";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)p->pid);
    FILE* f = fopen(path, "r");
    if (f != NULL && fgets(comm, sizeof comm, f) != NULL) comm[strcspn(comm, "\n")] = '\0';
    if (f != NULL) fclose(f);
    dprintf(fd, "%d %d %s - %s\n", (int)p->pid, (int)d->server, d->uuid, comm);
  }
}

static int is_server(const struct mpsd* d, const char* pid) {
  return d->server != 0 && atoi(pid) == (int)d->server;
}

void mpsd_command(struct mpsd* d, int fd, const char* line) {
  char cmd[64] = "", a[128] = "", b[128] = "";
  int n = sscanf(line, "%63s %127s %127s", cmd, a, b);
  mpsd_log(d, "Command: %s", line);
  if (n < 1) return;
  if (strcmp(cmd, "get_server_list") == 0) {
    if (d->server != 0) dprintf(fd, "%d\n", (int)d->server);
  } else if (strcmp(cmd, "get_server_status") == 0 && n == 2) {
    dprintf(fd, "%s\n", !is_server(d, a) ? "Server not found" : d->fault ? "FAULT" : "ACTIVE");
  } else if (strcmp(cmd, "get_client_list") == 0 && n == 2) {
    if (is_server(d, a)) list_clients(d, fd, 0);
  } else if (strcmp(cmd, "ps") == 0) {
    list_clients(d, fd, 1);
  } else if (strcmp(cmd, "set_default_active_thread_percentage") == 0 && n == 2 && atoi(a) > 0 && atoi(a) <= 100) {
    d->default_pct = (unsigned)atoi(a);
    dprintf(fd, "%u.0\n", d->default_pct);
  } else if (strcmp(cmd, "get_default_active_thread_percentage") == 0) {
    dprintf(fd, "%u.0\n", d->default_pct);
  } else if (strcmp(cmd, "set_active_thread_percentage") == 0 && n == 3 && is_server(d, a) && atoi(b) > 0 &&
             atoi(b) <= 100) {
    d->server_pct = (unsigned)atoi(b);
    dprintf(fd, "%u.0\n", d->server_pct);
  } else if (strcmp(cmd, "get_active_thread_percentage") == 0 && n == 2 && is_server(d, a)) {
    dprintf(fd, "%u.0\n", d->server_pct);
  } else if (strcmp(cmd, "set_default_device_pinned_mem_limit") == 0 && n == 3 && our_device(d, a) &&
             parse_limit(b) != 0) {
    d->default_pinned = parse_limit(b);
  } else if (strcmp(cmd, "get_default_device_pinned_mem_limit") == 0 && n == 2 && our_device(d, a)) {
    if (d->default_pinned == 0)
      dprintf(fd, "None\n");
    else
      dprintf(fd, "%lluM\n", (unsigned long long)(d->default_pinned >> 20));
  } else if (strcmp(cmd, "quit") == 0) {
    d->quit = 1;
  } else {
    dprintf(fd, "Unrecognized command or wrong arguments: %s\n", line);
  }
}
