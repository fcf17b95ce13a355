/* Captures in this process (arbiter_abi.h "Gated admission"): launches on a capturing stream build a
 * graph instead of running, so they are not gated (the gate's event would join the capture, or in
 * global mode break it); the graph's launch is. Other streams stay gated while one captures. A stream
 * can join a capture through an event without a begin call of its own, so the driver is asked about
 * each launch's stream (cuStreamIsCapturing) while any capture begun in this process is open; while
 * none is, nothing is asked. */
#include "gf_compute.h"
#include "gf_table.h"

typedef CUresult (*is_capturing_fn)(CUstream, int*);

static struct gf_table g_capturing; /* streams of this process whose capture began and did not end */
static int g_captures;              /* atomic: their number */

/* A capturing stream's key: the handle, or the thread for its per-thread default stream. */
static uint64_t capture_key(CUstream stream, int ptsz) {
  int own = (stream == NULL && ptsz) || stream == (CUstream)0x2; /* CU_STREAM_PER_THREAD */
  return own ? (uint64_t)pthread_self() | 1u : (uint64_t)(uintptr_t)stream;
}

void gf_capture_begin(CUresult rc, CUstream stream, int ptsz) {
  if (rc == CUDA_SUCCESS && gf_table_insert(&g_capturing, capture_key(stream, ptsz), 1) == 0)
    __atomic_fetch_add(&g_captures, 1, __ATOMIC_SEQ_CST);
}

void gf_capture_end(CUresult rc, CUstream stream, int ptsz) {
  uint64_t v;
  (void)rc; /* ended either way, unless the stream was not capturing (then it is not in the table) */
  if (gf_table_remove(&g_capturing, capture_key(stream, ptsz), &v))
    __atomic_fetch_sub(&g_captures, 1, __ATOMIC_SEQ_CST);
}

int gf_capturing(CUstream stream, int ptsz) {
  if (GF_LIKELY(__atomic_load_n(&g_captures, __ATOMIC_RELAXED) == 0)) return 0;
  is_capturing_fn real = (is_capturing_fn)gf_cuda(ptsz ? GF_cuStreamIsCapturing_ptsz : GF_cuStreamIsCapturing);
  int status = 0;             /* CU_STREAM_CAPTURE_STATUS_NONE */
  if (real == NULL) return 1; /* cannot tell: leave it alone */
  return real(stream, &status) != CUDA_SUCCESS || status != 0;
}

void gf_capture_after_fork(void) {
  gf_table_forget(&g_capturing);
  g_captures = 0;
}
