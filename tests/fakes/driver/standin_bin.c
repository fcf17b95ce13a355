/* An ELF stand-in for the driver's binaries a simulated node has only by name (nvidia-debugdump,
 * nvidia-persistenced, nvidia-cuda-mps-control/-server): a real driver's binaries are ELF programs,
 * and driver discovery mounts only those. */
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  (void)argc;
  const char* slash = strrchr(argv[0], '/');
  fprintf(stderr, "%s: not available on a simulated GPU node\n", slash ? slash + 1 : argv[0]);
  return 1;
}
