/* Slot liveness by OFD lock (limits_abi.h, GPUFRAC_SLOT_LOCKED): a write lock on a slot's lock byte
 * in the region file, held by the owning process through a descriptor of its own and dropped by the
 * kernel when that process dies or execs. Works across PID namespaces. Shared by the shim and the
 * host library. Raw fcntl system calls: no glibc symbol newer than the shim's floor. */
#ifndef GPUFRAC_SHIM_GF_LOCK_H
#define GPUFRAC_SHIM_GF_LOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Takes the write lock on slot's byte through fd (opened read-write). 0, or -errno: -EAGAIN (or
 * -EACCES) when another open file description holds it. A lock already held through the same open
 * file description is taken again (0): OFD locks never conflict with their own. */
int gf_slot_lock(int fd, unsigned slot);

/* Drops the lock on slot's byte held through fd (nothing when none is). */
void gf_slot_unlock(int fd, unsigned slot);

/* Whether an open file description other than fd's holds a lock on slot's byte (F_OFD_GETLK; a
 * read-only fd is enough): 1 held, 0 free, -errno when the kernel cannot say. */
int gf_slot_lock_held(int fd, unsigned slot);

#ifdef __cplusplus
}
#endif

#endif /* GPUFRAC_SHIM_GF_LOCK_H */
