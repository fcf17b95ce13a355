// The hook's part of driver injection (docs/architecture.md "The driver's user space"): after the
// driver's files are mounted (by the hook itself, by the runtime from gpufrac-runtime's config.json,
// or from the CDI spec), the container's loader cache is rebuilt so `libcuda.so.1` resolves. A root
// that cannot be written gets a private cache, bound read-only over its /etc/ld.so.cache.
#pragma once

#include <string>
#include <vector>

#include "bundle/oci.hpp"
#include "core/config/config.hpp"
#include "core/error.hpp"

namespace gpufrac::hook {

// `--ld-cache DIRS`: the driver's library directories, ':'-separated, each absolute and without
// "..": refused with one line naming the option otherwise.
Result<std::vector<std::string>> parse_ld_cache_dirs(std::string_view value);

// Rebuilds the loader cache of the container (pid, rootfs from spec) for the driver directories;
// true: written in place; false: a private cache in <state-dir>/containers/<key>/ld.so.cache, bound
// read-only over /etc/ld.so.cache (a read-only root).
Result<bool> refresh_ld_cache(const Config& cfg, const bundle::OciState& state, const bundle::BundleSpec& spec,
                              const std::string& container_key, const std::vector<std::string>& driver_dirs);

}  // namespace gpufrac::hook
