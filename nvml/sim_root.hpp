// Builds a simulated host root from a machine file: /proc/devices, the MIG capability minors and
// the /dev/nvidia* character nodes (real mknod, so containers see the right major:minor). Used by
// tests, the demo and `gpufrac simulate init-root`.
#pragma once

#include <string>

#include "core/error.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {

// The text a real driver would show, for the machine's GPU minors.
std::string simulated_proc_devices(const SimulatedMajors& majors);
std::string simulated_mig_minors(const SimulatedMachine& machine);

// Writes the files and, when `make_nodes` is set, creates the character nodes (needs CAP_MKNOD).
Result<> write_simulated_host_root(const SimulatedMachine& machine, const std::string& root, bool make_nodes);

}  // namespace gpufrac
