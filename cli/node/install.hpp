// The files `gpufrac node setup` installs on the host, versioned: <install-dir>/<version>/bin/
// (gpufrac, gpufrac-hook, gpufrac-runtime), <install-dir>/<version>/lib/gpufrac/libgpufrac-limits.so,
// and <install-dir>/<version>/lib/ (the libraries the C++ programs carry, found through their
// $ORIGIN rpath), with <install-dir>/current -> <version> switched atomically (a new link renamed
// over the old). Runtime configs and gpufrac's config name paths through `current`, so an upgrade
// changes no runtime config. A file is written beside and renamed into place, only when its bytes
// differ: a shim or library that running containers have mapped is never overwritten in place
// (their mappings keep the old inode), and an older version's directory stays until teardown.
#pragma once

#include <string>
#include <vector>

#include "cli/node/host_files.hpp"
#include "core/error.hpp"

namespace gpufrac::cli::node {

struct SourceFileSpec {
  std::string from;  // path in this process's file system
  std::string to;    // relative to <install-dir>/<version>/
  unsigned mode = 0755;
  // Relative to <install-dir>/<version>/: the loader the installed program names as its
  // interpreter, by absolute host path (the program's own names the build machine's); "" keeps it.
  std::string interp = {};
};

// The files to install: this gpufrac (/proc/self/exe), gpufrac-hook and gpufrac-runtime beside it
// (static programs), the shim beside it or else in the shim directory it was built for (it needs
// glibc 2.17 at most; /usr/lib/<triplet>/gpufrac in the package), and the shared libraries this
// gpufrac runs with but the driver's (read from /proc/self/maps, named by SONAME), glibc and its
// loader included, with glibc's other libraries from beside its libc.so.6: the installed gpufrac
// names the installed loader as its interpreter and finds the rest through its RPATH
// $ORIGIN/../lib, so it needs nothing from the host, not even its libc.
Result<std::vector<SourceFileSpec>> install_sources();

// Host paths of what is installed, through `current`.
struct Installed {
  std::string dir;      // <install-dir>/current
  std::string cli;      // .../bin/gpufrac
  std::string hook;     // .../bin/gpufrac-hook
  std::string runtime;  // .../bin/gpufrac-runtime
  std::string shim;     // .../lib/gpufrac/libgpufrac-limits.so
};
Installed installed_paths(const std::string& install_dir);

// Installs the version (true when a byte changed). The install dir's creation is recorded in m.
Result<bool> install_version(const HostFiles& host, Manifest& m, const std::string& version,
                             const std::vector<SourceFileSpec>& files);

}  // namespace gpufrac::cli::node
