/* An interposing library loaded after the shim (a DT_NEEDED of shim_next): its getppid asks
 * dlsym(RTLD_NEXT, "getppid") for the next definition. If the shim's dlsym lost the caller,
 * RTLD_NEXT would be resolved relative to the shim and return this very function: infinite
 * recursion. */
#include <dlfcn.h>
#include <stddef.h>
#include <sys/types.h>

pid_t getppid(void) {
  pid_t (*next)(void) = (pid_t(*)(void))dlsym(RTLD_NEXT, "getppid");
  return next != getppid && next != NULL ? next() : -1;
}
