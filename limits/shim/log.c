/* One-line messages on stderr, each at most once per process. write(2) of a stack buffer: no
 * stdio state, safe from any thread. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "gf_shim.h"

static int g_refusal_logged;

void gf_log_once(int* once, const char* fmt, ...) {
  if (__atomic_exchange_n(once, 1, __ATOMIC_ACQ_REL)) return;
  char buf[1024] = "gpufrac: ";
  size_t len = 9;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + len, sizeof buf - len - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  len += (size_t)n < sizeof buf - len - 1 ? (size_t)n : sizeof buf - len - 2;
  buf[len++] = '\n';
  ssize_t rc = write(STDERR_FILENO, buf, len);
  (void)rc;
}

void gf_log_refusal(const char* api, uint64_t n, int idx, uint64_t in_use) {
  const struct gf_device_limit* d = &gf_g.cfg.devices[idx];
  gf_log_once(&g_refusal_logged, "%s of %llu refused: limit %llu on %s, %llu in use by this container", api,
              (unsigned long long)n, (unsigned long long)d->limit, d->uuid, (unsigned long long)in_use);
}

void gf_log_after_fork(void) {
  g_refusal_logged = 0;
}
