/* Checks that the shim's dlsym keeps RTLD_NEXT relative to the real caller (shim_next_lib.c):
 * prints "getppid ok" when the interposed getppid reaches libc's. */
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  pid_t via_lib = getppid();
  pid_t direct = (pid_t)syscall(SYS_getppid);
  printf("getppid %s\n", via_lib == direct ? "ok" : "wrong");
  return via_lib == direct ? 0 : 1;
}
