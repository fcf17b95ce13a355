/* Every launch path the driver offers, gated (gf_compute.h): kernels, kernels with a launch
 * configuration, cooperative kernels, their per-thread-default-stream forms, cooperative kernels on
 * several devices (gated on the calling thread's device, counted on the first entry's stream), and
 * graph launches. A process without a compute line pays one predictable branch. */
#include "gf_compute.h"
#include "gf_exports.h"

typedef CUresult (*kernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
typedef CUresult (*kernel_ex_fn)(const CUlaunchConfig*, CUfunction, void**, void**);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**);
typedef CUresult (*multi_fn)(CUDA_LAUNCH_PARAMS*, unsigned, unsigned);
typedef CUresult (*graph_fn)(CUgraphExec, CUstream);

static CUresult kernel(enum gf_cuda_fn which, int ptsz, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  kernel_fn real = (kernel_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert())) return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
  struct gf_gate g = gf_gate_enter(s, ptsz);
  CUresult rc = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
  gf_gate_exit(g, rc, s, ptsz);
  return rc;
}

GF_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  return kernel(GF_cuLaunchKernel, 0, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
GF_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                       unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  return kernel(GF_cuLaunchKernel_ptsz, 1, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

static CUresult kernel_ex(enum gf_cuda_fn which, int ptsz, const CUlaunchConfig* c, CUfunction f, void** params,
                          void** extra) {
  kernel_ex_fn real = (kernel_ex_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert()) || c == NULL) return real(c, f, params, extra);
  struct gf_gate g = gf_gate_enter(c->hStream, ptsz);
  CUresult rc = real(c, f, params, extra);
  gf_gate_exit(g, rc, c->hStream, ptsz);
  return rc;
}

GF_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  return kernel_ex(GF_cuLaunchKernelEx, 0, c, f, params, extra);
}
GF_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  return kernel_ex(GF_cuLaunchKernelEx_ptsz, 1, c, f, params, extra);
}

static CUresult coop(enum gf_cuda_fn which, int ptsz, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                     unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params) {
  coop_fn real = (coop_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert())) return real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
  struct gf_gate g = gf_gate_enter(s, ptsz);
  CUresult rc = real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
  gf_gate_exit(g, rc, s, ptsz);
  return rc;
}

GF_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params) {
  return coop(GF_cuLaunchCooperativeKernel, 0, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}
GF_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                  unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params) {
  return coop(GF_cuLaunchCooperativeKernel_ptsz, 1, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

GF_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list, unsigned n, unsigned flags) {
  multi_fn real = (multi_fn)gf_cuda(GF_cuLaunchCooperativeKernelMultiDevice);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert()) || list == NULL || n == 0) return real(list, n, flags);
  struct gf_gate g = gf_gate_enter(list[0].hStream, 0);
  CUresult rc = real(list, n, flags);
  gf_gate_exit(g, rc, list[0].hStream, 0);
  return rc;
}

static CUresult graph(enum gf_cuda_fn which, int ptsz, CUgraphExec exec, CUstream s) {
  graph_fn real = (graph_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert())) return real(exec, s);
  struct gf_gate g = gf_gate_enter(s, ptsz);
  CUresult rc = real(exec, s);
  gf_gate_exit(g, rc, s, ptsz);
  return rc;
}

GF_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
  return graph(GF_cuGraphLaunch, 0, exec, s);
}
GF_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s) {
  return graph(GF_cuGraphLaunch_ptsz, 1, exec, s);
}
