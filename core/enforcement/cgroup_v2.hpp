// The node's cgroup layout and a process's cgroup v2 directory, read under the config's
// cgroup-root and proc-root (tests replace both with fixture trees: tests/fixtures/cgroup). The
// driver's per-cgroup memory limits work on cgroup v2 only (docs/architecture.md "Driver-enforced
// memory limits"): a v1 or hybrid node falls back to the shim.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/error.hpp"

namespace gpufrac {

enum class CgroupLayout {
  v2,      // cgroup-root is the unified hierarchy (cgroup.controllers at its top)
  hybrid,  // v1 controllers, and the unified hierarchy below at cgroup-root/unified
  v1,      // v1 controllers only (or nothing recognisable)
};
const char* to_string(CgroupLayout l);  // "cgroup v2", "hybrid cgroup v1/v2", "cgroup v1"

CgroupLayout detect_cgroup_layout(const std::string& cgroup_root);

// The cgroup v2 directory of a process: cgroup-root followed by the path of the "0::" line of
// <proc-root>/<pid>/cgroup ("/sys/fs/cgroup/system.slice/x.scope"). An error names the file when the
// line is missing or its path is not a plain absolute path.
Result<std::string> process_cgroup_dir(const std::string& proc_root, const std::string& cgroup_root, pid_t pid);

// The parent directory of a cgroup directory, kept under cgroup-root (a Kubernetes pod's cgroup for
// one of its containers'); the root itself has none.
Result<std::string> parent_cgroup_dir(const std::string& dir, const std::string& cgroup_root);

}  // namespace gpufrac
