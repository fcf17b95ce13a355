/* Link-time stand-in for libdl.so.2: the shim's references to dlopen and dlvsym are recorded as
 * "libdl.so.2 (GLIBC_2.2.5)", which every glibc from 2.17 on satisfies (glibc 2.34 and later
 * keep these versions in libc.so.6 and an empty libdl.so.2). Linking against the build host's
 * libc instead would record "libc.so.6 (GLIBC_2.34)" and the shim would not load in images with
 * an older glibc. Never loaded at run time: the shim has no RPATH. */
#include <stdlib.h>

void* dlopen(const char* file, int mode) {
  (void)file, (void)mode;
  abort();
}
void* dlvsym(void* handle, const char* name, const char* version) {
  (void)handle, (void)name, (void)version;
  abort();
}
