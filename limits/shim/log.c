/* One-line messages on stderr, each at most once per process. write(2) of a stack buffer: no
 * stdio state, safe from any thread. Uses nothing of the process state (state.c calls it). */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "gf_shim.h"

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
