/* What the launch gate needs to see besides launches (gf_compute.h): a lease holder blocked in a
 * synchronise call waits for its own GPU work and must not look idle to the other containers (and
 * what completed tells how long its launches take); and which streams capture. Both cost a process
 * without a compute share one predictable branch. */
#include "gf_compute.h"
#include "gf_exports.h"

typedef CUresult (*ctx_sync_fn)(void);
typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*event_fn)(CUevent);
typedef CUresult (*begin_v2_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_fn)(CUstream, CUgraph*);

GF_EXPORT CUresult cuCtxSynchronize(void) {
  ctx_sync_fn real = (ctx_sync_fn)gf_cuda(GF_cuCtxSynchronize);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert())) return real();
  struct gf_compute_dev* d = gf_sync_begin();
  CUresult rc = real();
  gf_sync_end(d, rc, NULL, 0, GF_SYNCED_ALL);
  return rc;
}

static CUresult stream_sync(enum gf_cuda_fn which, int ptsz, CUstream s) {
  stream_fn real = (stream_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert())) return real(s);
  struct gf_compute_dev* d = gf_sync_begin();
  CUresult rc = real(s);
  gf_sync_end(d, rc, s, ptsz, GF_SYNCED_STREAM);
  return rc;
}

GF_EXPORT CUresult cuStreamSynchronize(CUstream s) {
  return stream_sync(GF_cuStreamSynchronize, 0, s);
}
GF_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
  return stream_sync(GF_cuStreamSynchronize_ptsz, 1, s);
}

GF_EXPORT CUresult cuEventSynchronize(CUevent ev) {
  event_fn real = (event_fn)gf_cuda(GF_cuEventSynchronize);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  if (GF_LIKELY(gf_compute_inert())) return real(ev);
  struct gf_compute_dev* d = gf_sync_begin();
  CUresult rc = real(ev);
  gf_sync_end(d, rc, NULL, 0, GF_SYNCED_EVENT);
  return rc;
}

static CUresult begin(enum gf_cuda_fn which, int ptsz, CUstream s) {
  stream_fn real = (stream_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(s);
  if (!gf_compute_inert()) gf_capture_begin(rc, s, ptsz);
  return rc;
}

static CUresult begin_v2(enum gf_cuda_fn which, int ptsz, CUstream s, CUstreamCaptureMode mode) {
  begin_v2_fn real = (begin_v2_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(s, mode);
  if (!gf_compute_inert()) gf_capture_begin(rc, s, ptsz);
  return rc;
}

GF_EXPORT CUresult cuStreamBeginCapture(CUstream s) {
  return begin(GF_cuStreamBeginCapture, 0, s);
}
GF_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) {
  return begin(GF_cuStreamBeginCapture_ptsz, 1, s);
}
GF_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  return begin_v2(GF_cuStreamBeginCapture_v2, 0, s, mode);
}
GF_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
  return begin_v2(GF_cuStreamBeginCapture_v2_ptsz, 1, s, mode);
}

static CUresult end(enum gf_cuda_fn which, int ptsz, CUstream s, CUgraph* graph) {
  end_fn real = (end_fn)gf_cuda(which);
  if (GF_UNLIKELY(real == NULL)) return gf_cuda_missing();
  CUresult rc = real(s, graph);
  if (!gf_compute_inert()) gf_capture_end(rc, s, ptsz);
  return rc;
}

GF_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph* graph) {
  return end(GF_cuStreamEndCapture, 0, s, graph);
}
GF_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph* graph) {
  return end(GF_cuStreamEndCapture_ptsz, 1, s, graph);
}
