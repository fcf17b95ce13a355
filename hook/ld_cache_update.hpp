// The container's loader cache once the driver's libraries are mounted (docs/architecture.md "The
// driver's user space"). The host's ldconfig (static, root-owned, not writable by others: copied
// into a memfd that is sealed and then checked, before anything of the container is touched) runs
// in a private copy of the container's mount namespace pivoted into its root, as nobody, with no
// capabilities, no_new_privs, an empty environment and a scratch tmpfs for its output: no program
// of the image runs, nothing outside the root is reachable, a symlink in the image resolves inside
// the image.
// The cache lists the driver's directories first, then the image's own /etc/ld.so.conf and the
// usual system directories, so the image's libraries keep working. A writable root gets the cache
// in place (/etc/ld.so.cache replaced by rename, never through a symlink), so `ldconfig` and
// package managers in the container keep working; a read-only root gets the bytes back for a
// read-only bind over /etc/ld.so.cache.
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::hook {

// The host's static ldconfig in `sbin` (default /sbin): `<sbin>/ldconfig.real` when it exists (Ubuntu,
// where /sbin/ldconfig is a shell script that execs it; NVIDIA's toolkit makes the same choice),
// else `<sbin>/ldconfig`.
std::string host_ldconfig(const std::string& sbin = "/sbin");

struct LdCacheJob {
  std::string mnt_ns_path;                 // /proc/<pid>/ns/mnt of the container
  std::string rootfs;                      // the container root as seen in that namespace
  std::vector<std::string> driver_dirs;    // container directories of the driver's libraries
  bool read_only_root = false;             // root.readonly: the image is never written
  std::string ldconfig = host_ldconfig();  // the host's ldconfig
};

struct LdCacheOutcome {
  bool in_place = false;  // written to the root's /etc/ld.so.cache
  std::string bytes;      // otherwise: the cache, for a read-only bind over /etc/ld.so.cache
};

Result<LdCacheOutcome> update_container_ld_cache(const LdCacheJob& job);

// The host program (regular, root-owned, not group/other-writable) copied into a sealed memfd,
// and the sealed copy checked to be a static ELF: it runs inside the container root, where no
// loader of the host exists.
Result<int> sealed_static_program(const std::string& path);

// Our ld.so.conf for the container: driver directories, the image's /etc/ld.so.conf when it has
// one, then the system directories of both Debian-like and RHEL-like images.
std::string container_ld_so_conf(const std::vector<std::string>& driver_dirs, bool image_has_conf);

}  // namespace gpufrac::hook
