/* A process's name in the simulated driver's shared files ("<file>.usage/<name>",
 * "<file>.checkpoint/<name>") and its liveness, in whatever PID namespace it and its reader run
 * (README.md "Processes in their own PID namespace").
 *
 * The host's PID namespace is the one recorded in "<file>.pidns" (its inode, written once by the
 * first process that attaches the fake libnvidia-ml.so.1's state file: tests/fakes/nvml/fake_pidns.hpp;
 * absent: every process counts as the host's). A process of the host's namespace
 * is named "<pid>", as before; one of another namespace "<pid>@<inode>", its pid in its own
 * namespace and that namespace's inode. Each process holds an OFD lock on "<dir>/<name>.live" for
 * its life (a fork child drops its copy), so a reader that cannot see the process in its /proc (a
 * container's reader of another container's process) still tells a live one from a dead one. */
#ifndef GPUFRAC_FAKE_CUDA_PROCNAME_H
#define GPUFRAC_FAKE_CUDA_PROCNAME_H

#include <stddef.h>

#define FAKE_NAME_MAX 48

/* The inode of /proc/<pid>/ns/pid ("self" for this process), 0 when it cannot be read. */
unsigned long long fake_pidns_of(const char* pid);
/* The host's namespace's inode from "<state>.pidns", 0 when none is recorded. */
unsigned long long fake_host_pidns(const char* state);

/* This process's name under state (fork children get their own). */
void fake_self_name(const char* state, char* out, size_t len);
/* The name of the process a pid of the caller's namespace names (its namespace as the host sees it). */
void fake_name_of_pid(const char* state, int pid, char* out, size_t len);

/* Takes this process's ".live" lock in dir (once per process; again in a fork child). */
void fake_live_lock(const char* dir, const char* name);
/* Whether the process named wrote an entry and is alive, in the caller's view: by its start time
 * when it is of the caller's namespace (start: what the entry recorded), else by its ".live" lock. */
int fake_name_alive(const char* state, const char* dir, const char* name, unsigned long long start);
/* The pid by which the caller can signal the process named, 0 when it is of another namespace. */
long fake_name_local_pid(const char* state, const char* name);

#endif /* GPUFRAC_FAKE_CUDA_PROCNAME_H */
