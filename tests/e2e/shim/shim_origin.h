/* Where a function pointer lives: "<library file name>:<symbol>", for the resolution tests. */
#ifndef GPUFRAC_SHIM_ORIGIN_H
#define GPUFRAC_SHIM_ORIGIN_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static inline const char* shim_origin(const void* fn, char* buf, size_t len) {
  Dl_info info;
  if (fn == NULL) return "null";
  if (dladdr(fn, &info) == 0 || info.dli_fname == NULL) return "unknown";
  const char* base = strrchr(info.dli_fname, '/');
  snprintf(buf, len, "%s:%s", base != NULL ? base + 1 : info.dli_fname,
           info.dli_sname != NULL && info.dli_saddr == fn ? info.dli_sname : "?");
  return buf;
}

#endif
