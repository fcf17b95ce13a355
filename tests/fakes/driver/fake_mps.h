/* The fake MPS control daemon (nvidia-cuda-mps-control, mps_control.c) and the fake libcuda's MPS
 * client (tests/fakes/cuda/mps.c) talk over the pipe directory as README.md here describes:
 *
 *  <pipe>/control                      unix stream socket. A peer's first line says who it is:
 *      "client <pid> <uid>\n"          a CUDA process connecting at cuInit. The daemon answers one
 *                                      line, "ok <server pid> <thread %> <pinned limit bytes, 0 =
 *                                      none> <GPU uuid> <fault generation>\n" (the server is
 *                                      started for the first client), "not-ready\n" while the
 *                                      server is in FAULT (CUDA_ERROR_MPS_SERVER_NOT_READY), or
 *                                      "error <text>\n". The connection stays open for the process's
 *                                      life: its end is the client's exit. "fault\n" on it reports
 *                                      a fatal GPU fault of this client.
 *      "cmd <control command>\n"       the control shell (nvidia-cuda-mps-control without -d/-f):
 *                                      the daemon writes the answer and closes.
 *  <pipe>/nvidia-cuda-mps-control.pid  the daemon's pid, as the real daemon writes it.
 *  <pipe>/fake-mps-state               struct fake_mps_state, mapped read-only by clients: a fault
 *                                      raises `fault_generation`; a client whose generation at
 *                                      connect is older gets CUDA_ERROR_ILLEGAL_ADDRESS from then on.
 *  /dev/shm/cuda.shm.<server pid>      the server's shared memory segment, in the daemon's /dev/shm
 *                                      (gpufrac binds <state-dir>/mps/<GPU>/shm there): a client
 *                                      that cannot see it fails to connect, as a real one does. */
#ifndef GPUFRAC_FAKE_MPS_H
#define GPUFRAC_FAKE_MPS_H

#include <stdint.h>

#define FAKE_MPS_CONTROL "control"
#define FAKE_MPS_PID_FILE "nvidia-cuda-mps-control.pid"
#define FAKE_MPS_STATE_FILE "fake-mps-state"
#define FAKE_MPS_SHM_PREFIX "/dev/shm/cuda.shm."
#define FAKE_MPS_DEFAULT_PIPE "/tmp/nvidia-mps"
#define FAKE_MPS_DEFAULT_LOG "/var/log/nvidia-mps"
#define FAKE_MPS_STATE_MAGIC 0x4d505346u /* "FSPM" */

struct fake_mps_state {
  uint32_t magic;
  uint32_t server_pid;       /* 0: no server */
  uint64_t fault_generation; /* raised at each fatal fault; read with __atomic_load_n */
};

#endif /* GPUFRAC_FAKE_MPS_H */
