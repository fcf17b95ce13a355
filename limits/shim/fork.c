/* The top of the shim's process state: the constructor and the fork handlers, which give a child its
 * own identity, no slot, no pointers, no lease and no launches of its parent. Calls down into every
 * module (state.c, charge.c, the compute gate, the loaders); nothing calls up into it. */
#include <pthread.h>

#include "gf_charge.h"
#include "gf_compute.h"
#include "gf_shim.h"

static void before_fork(void) {
  gf_state_before_fork();
}

static void after_fork_parent(void) {
  gf_state_after_fork_parent();
}

static void after_fork_child(void) {
  gf_state_after_fork_child();
  gf_charge_after_fork();
  gf_real_after_fork();
  gf_compute_after_fork();
}

__attribute__((constructor)) static void gf_shim_load(void) {
  gf_resolve_real_dlsym();
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
