// `gpufrac node setup --keep-running` (the node DaemonSet's main container), after setup:
//  - every kPollSeconds, a fingerprint of the driver and MIG layout (the /dev/nvidia* and
//    /dev/nvidia-caps/* nodes with their numbers, /proc/driver/nvidia/version and gpus/, and on a
//    simulated machine its file) under the config's host-root; when it changes (and once at the
//    start), the installed gpufrac refreshes the inventory cache (`info --refresh`) and the CDI spec
//    (`cdi generate`), on the host (chroot into --host-root);
//  - with --metrics-listen ADDR, the installed `gpufrac metrics --listen ADDR` runs on the host
//    (restarted if it exits);
//  - SIGTERM or SIGINT ends it; with --teardown-on-exit, `node teardown` runs first.
#pragma once

#include "cli/node/setup.hpp"
#include "core/error.hpp"

namespace gpufrac::cli::node {

inline constexpr int kPollSeconds = 2;

Result<> keep_running(const NodeArgs& a);

}  // namespace gpufrac::cli::node
