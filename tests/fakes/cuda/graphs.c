/* Stream capture and graphs: while a stream captures, its launches are appended to the graph
 * being built instead of running; an instantiated graph runs as one piece of work whose duration
 * is the sum of its kernels' (the nodes of a captured stream run in order anyway) and whose width
 * is its widest kernel's. */
#include <stdlib.h>

#include "fake_cuda.h"

#undef cuStreamBeginCapture

static CUresult begin(CUstream stream, int per_thread) {
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  if (rc != CUDA_SUCCESS) return rc;
  if (stream == NULL && !per_thread) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream */
  struct fake_graph* g = calloc(1, sizeof *g);
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = FAKE_GRAPH_MAGIC;
  pthread_mutex_lock(&s->mu);
  rc = s->capture != NULL ? CUDA_ERROR_ILLEGAL_STATE : CUDA_SUCCESS;
  if (rc == CUDA_SUCCESS) __atomic_store_n(&s->capture, g, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&s->mu);
  if (rc != CUDA_SUCCESS) free(g);
  return rc;
}

static CUresult begin_mode(CUstream stream, CUstreamCaptureMode mode, int per_thread) {
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  return begin(stream, per_thread);
}

/* CUDA 10.0's form (global mode) and CUDA 10.1's, each with its per-thread variant. */
FAKE_API CUresult cuStreamBeginCapture(CUstream stream) {
  return begin(stream, 0);
}
FAKE_API CUresult cuStreamBeginCapture_ptsz(CUstream stream) {
  return begin(stream, 1);
}
FAKE_API CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  return begin_mode(stream, mode, 0);
}
FAKE_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  return begin_mode(stream, mode, 1);
}

static CUresult end(CUstream stream, CUgraph* graph, int per_thread) {
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  if (rc != CUDA_SUCCESS) return rc;
  if (graph == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&s->mu);
  struct fake_graph* g = s->capture;
  __atomic_store_n(&s->capture, NULL, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&s->mu);
  if (g == NULL) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = (CUgraph)g;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return end(stream, graph, 0);
}
FAKE_API CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
  return end(stream, graph, 1);
}

static CUresult is_capturing(CUstream stream, CUstreamCaptureStatus* status, int per_thread) {
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  if (rc != CUDA_SUCCESS) return rc;
  if (status == NULL) return CUDA_ERROR_INVALID_VALUE;
  int capturing = __atomic_load_n(&s->capture, __ATOMIC_ACQUIRE) != NULL;
  *status = capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  return is_capturing(stream, status, 0);
}
FAKE_API CUresult cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus* status) {
  return is_capturing(stream, status, 1);
}

static struct fake_graph* graph_of(void* handle, uint32_t magic) {
  struct fake_graph* g = handle;
  return g != NULL && g->magic == magic ? g : NULL;
}

FAKE_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  struct fake_graph* g = graph_of(graph, FAKE_GRAPH_MAGIC);
  if (exec == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (g == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_graph* e = malloc(sizeof *e);
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *e = (struct fake_graph){FAKE_EXEC_MAGIC, g->nodes, g->width, g->total};
  *exec = (CUgraphExec)e;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* error_node, char* log,
                                        size_t log_size) {
  if (error_node != NULL) *error_node = NULL;
  if (log != NULL && log_size > 0) log[0] = '\0';
  return cuGraphInstantiateWithFlags(exec, graph, 0);
}

static CUresult launch(CUgraphExec exec, CUstream stream, int per_thread) {
  struct fake_graph* e = graph_of(exec, FAKE_EXEC_MAGIC);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_stream* s;
  CUresult rc = fake_stream_of(stream, per_thread, &s);
  return rc != CUDA_SUCCESS ? rc : fake_stream_enqueue(s, e->total, e->width, e->nodes);
}

FAKE_API CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return launch(exec, stream, 0);
}
FAKE_API CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  return launch(exec, stream, 1);
}

static CUresult destroy(void* handle, uint32_t magic) {
  struct fake_graph* g = graph_of(handle, magic);
  if (g == NULL) return CUDA_ERROR_INVALID_HANDLE;
  g->magic = 0;
  free(g);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuGraphExecDestroy(CUgraphExec exec) {
  return destroy(exec, FAKE_EXEC_MAGIC);
}
FAKE_API CUresult cuGraphDestroy(CUgraph graph) {
  return destroy(graph, FAKE_GRAPH_MAGIC);
}
