/* The process a swap test checkpoints (tests/e2e/swap/README.md): `swap_target COUNT BYTES`
 * allocates COUNT blocks of BYTES on device 0, writes a pattern into every byte, prints "ready <pid>",
 * then runs the commands it reads, one a line, printing one line for each:
 *   check          a kernel, then every byte read back and compared: "ok <bytes>" or "bad <block> <offset>"
 *   check-after F  prints "calling", then the same check; its line ends "marker yes|no": whether file
 *                  F existed when the check's first CUDA call returned (a call blocked until unlock
 *                  returns after the controller made F)
 *   busy MS        an asynchronous kernel of MS ms: "launched"
 *   exit           frees everything and exits 0 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BLOCKS 64

static CUdeviceptr g_block[MAX_BLOCKS];
static unsigned char* g_buf;
static size_t g_count, g_bytes;
static CUmodule g_mod;

static unsigned char pattern(size_t block, size_t off) {
  return (unsigned char)(off * 131u + block * 17u + (off >> 12) + 1u);
}

static int die(const char* what, CUresult rc) {
  const char* name = "?";
  cuGetErrorName(rc, &name);
  printf("error %s %s\n", what, name);
  fflush(stdout);
  exit(1);
}

static void launch(const char* kernel) {
  CUfunction f;
  CUresult rc = cuModuleGetFunction(&f, g_mod, kernel);
  if (rc == CUDA_SUCCESS) rc = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
  if (rc != CUDA_SUCCESS) die("launch", rc);
}

/* Every byte of every block read back; marker: the file whose existence after the first call is told. */
static void check(const char* marker) {
  launch("sleep_1ms");
  CUresult rc = cuCtxSynchronize();
  if (rc != CUDA_SUCCESS) die("synchronize", rc);
  const int marked = marker != NULL && access(marker, F_OK) == 0;
  for (size_t b = 0; b < g_count; b++) {
    if ((rc = cuMemcpyDtoH(g_buf, g_block[b], g_bytes)) != CUDA_SUCCESS) die("copy", rc);
    for (size_t i = 0; i < g_bytes; i++) {
      if (g_buf[i] != pattern(b, i)) {
        printf("bad %zu %zu\n", b, i);
        fflush(stdout);
        return;
      }
    }
  }
  printf("ok %zu%s%s\n", g_count * g_bytes, marker != NULL ? " marker " : "",
         marker == NULL ? ""
         : marked       ? "yes"
                        : "no");
  fflush(stdout);
}

static void setup(void) {
  CUdevice dev;
  CUcontext ctx;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&dev, 0);
  if (rc == CUDA_SUCCESS) rc = cuCtxCreate(&ctx, 0, dev);
  if (rc == CUDA_SUCCESS) rc = cuModuleLoadData(&g_mod, "");
  if (rc != CUDA_SUCCESS) die("init", rc);
  if ((g_buf = malloc(g_bytes)) == NULL) die("malloc", CUDA_ERROR_OUT_OF_MEMORY);
  for (size_t b = 0; b < g_count; b++) {
    if ((rc = cuMemAlloc(&g_block[b], g_bytes)) != CUDA_SUCCESS) die("alloc", rc);
    for (size_t i = 0; i < g_bytes; i++) g_buf[i] = pattern(b, i);
    if ((rc = cuMemcpyHtoD(g_block[b], g_buf, g_bytes)) != CUDA_SUCCESS) die("copy", rc);
  }
}

int main(int argc, char** argv) {
  if (argc != 3 || (g_count = strtoul(argv[1], NULL, 10)) == 0 || g_count > MAX_BLOCKS ||
      (g_bytes = strtoul(argv[2], NULL, 10)) == 0) {
    fprintf(stderr, "usage: swap_target COUNT(1-%d) BYTES\n", MAX_BLOCKS);
    return 2;
  }
  setup();
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  char line[4096];
  while (fgets(line, sizeof line, stdin) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, "check") == 0) {
      check(NULL);
    } else if (strncmp(line, "check-after ", 12) == 0) {
      printf("calling\n");
      fflush(stdout);
      check(line + 12);
    } else if (strncmp(line, "busy ", 5) == 0) {
      char kernel[64];
      snprintf(kernel, sizeof kernel, "sleep_%.40sms", line + 5);
      launch(kernel);
      printf("launched\n");
      fflush(stdout);
    } else if (strcmp(line, "exit") == 0) {
      for (size_t b = 0; b < g_count; b++) cuMemFree(g_block[b]);
      return 0;
    } else {
      printf("unknown %s\n", line);
      fflush(stdout);
    }
  }
  return 0;
}
