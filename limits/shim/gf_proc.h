/* Process liveness from /proc/<pid>/stat (pid + start time, limits_abi.h). Shared by the shim
 * and the host library. */
#ifndef GPUFRAC_SHIM_GF_PROC_H
#define GPUFRAC_SHIM_GF_PROC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gf_proc_stat {
  char state;     /* field 3: R, S, D, Z, X, ... */
  uint64_t start; /* field 22: start time in clock ticks since boot */
};

/* Parses the text of a stat file (the command name may hold spaces and parentheses). 0 or -1. */
int gf_proc_stat_parse(const char* buf, size_t len, struct gf_proc_stat* out);

/* Reads and parses a stat file. Returns 0, or -errno (-ENOENT, -ESRCH: no such process). */
int gf_proc_stat_read(const char* path, struct gf_proc_stat* out);

enum gf_liveness { GF_DEAD = 0, GF_ALIVE = 1, GF_UNKNOWN = 2 };

/* Liveness of the process recorded as (pid, start) with start masked to 38 bits as in the owner
 * word (0: not recorded). Reads <proc_root>/<pid>/stat: missing, zombie or another start time is
 * GF_DEAD; unreadable for another reason is GF_UNKNOWN, which callers treat as alive. */
enum gf_liveness gf_proc_liveness(const char* proc_root, uint64_t pid, uint64_t start);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_PROC_H */
