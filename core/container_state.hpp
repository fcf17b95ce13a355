// One container's files on the host, <state-dir>/containers/<id>/: the limit file and usage region
// the shim reads (limits_abi.h) and the container's /etc/ld.so.preload. Written by whichever
// front-end books the container (hook, runtime wrapper, CDI hook), removed at release.
#pragma once

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/ledger_entry.hpp"
#include "core/plan.hpp"

namespace gpufrac {

// Writes (atomically) the limit file listing every booking of the container, creates the usage
// region if it does not exist yet (an existing region keeps its live counts), and writes the
// preload file from the image's own /etc/ld.so.preload content. Directory mode 0755.
Result<ContainerFiles> write_container_files(const Config& cfg, const std::string& container_id,
                                             const std::vector<LedgerEntry>& bookings, const std::string& image_preload);
// Removes the container's directory; a missing directory is not an error.
Result<> remove_container_files(const Config& cfg, const std::string& container_id);

}  // namespace gpufrac
