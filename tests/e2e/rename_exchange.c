// rename_exchange A B [PAUSE_US]: exchanges the directories A and B (renameat2 RENAME_EXCHANGE) in a
// loop, tight or with a pause of PAUSE_US microseconds after each, until SIGTERM or SIGINT; then once
// more when the count is odd, so that A and B end where they started; prints the number made.
// tests/e2e/hook_exchange_test.sh runs it beside container starts: a directory of the rootfs exchanged for one holding
// a host directory.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int exchange(const char* a, const char* b) {
  if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) return 0;
  fprintf(stderr, "rename_exchange: %s <-> %s: %s\n", a, b, strerror(errno));
  return -1;
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: rename_exchange A B [PAUSE_US]\n");
    return 2;
  }
  const long pause_us = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
  const struct timespec pause = {pause_us / 1000000, pause_us % 1000000 * 1000};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  unsigned long long n = 0;
  while (!stop) {
    if (exchange(argv[1], argv[2]) != 0) return 1;
    ++n;
    if (pause_us > 0) nanosleep(&pause, NULL);
  }
  if (n % 2 && exchange(argv[1], argv[2]) != 0) return 1;
  printf("%llu\n", n + n % 2);
  return 0;
}
