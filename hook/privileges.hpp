// Least privilege for the hook: capabilities narrowed per phase (libcap) and a seccomp allow-list
// (libseccomp) for the phase that touches the container rootfs.
#pragma once

#include <sys/capability.h>

#include <initializer_list>

#include "core/error.hpp"

namespace gpufrac::hook {

// What the whole hook may ever need; everything else leaves the bounding set at start-up. CAP_MKNOD
// is never in one of the hook's own effective sets: it stays for the dynamic MIG provisioner the
// hook runs (`gpufrac mig provision`, a root exec that gets the bounding set), which makes a new
// instance's /dev/nvidia-caps nodes when the driver has not. CAP_SETUID and CAP_SETGID are only for
// the library-cache helper (ld_cache_update.hpp), which becomes nobody before it runs ldconfig.
// CAP_KILL likewise is never the hook's own: it stays for the burst reclaimer the hook starts
// (`gpufrac reclaim start`), which stops a borrower's process whatever its user.
inline constexpr cap_value_t kHookCapabilities[] = {
    CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_SYS_PTRACE, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
    CAP_FOWNER,    CAP_MKNOD,      CAP_SETUID,     CAP_SETGID,       CAP_KILL};

// Drops every capability outside kHookCapabilities from the bounding set, inheritable and ambient
// sets. A non-root hook (no CAP_SETPCAP) keeps what it has: it cannot mount anyway.
Result<> restrict_bounding_set();
// Sets the effective set to `keep` (a subset of what is permitted), leaving the permitted set as it
// is, so a later phase can raise what it needs: the booking phase runs with almost nothing (the one
// exception: mounting a GPU's compute arbiter tmpfs raises CAP_SYS_ADMIN for that mount alone,
// state/compute_mount.hpp).
Result<> set_effective(std::initializer_list<cap_value_t> keep);

// The phases' effective sets: parsing input and booking only read (bundles, caches, and the
// namespace links under /proc/<pid>/ns, which need ptrace read access to a process with more
// capabilities, hence CAP_SYS_PTRACE); entering the container's mount namespace needs
// CAP_SYS_ADMIN/CAP_SYS_CHROOT too.
inline constexpr std::initializer_list<cap_value_t> kBookingCapabilities = {CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE};
inline constexpr std::initializer_list<cap_value_t> kApplyCapabilities = {
    CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_SYS_PTRACE, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};

// Sets permitted = effective = `keep` (a subset of what is permitted now), inheritable empty.
Result<> keep_only(std::initializer_list<cap_value_t> keep);
// The rootfs phase's syscall allow-list: open/stat/mkdir/move_mount/mount_setattr and what the C
// runtime needs; everything else fails with EPERM. Sets no_new_privs.
Result<> install_rootfs_seccomp();

}  // namespace gpufrac::hook
