// Simulated machines: a YAML file describing GPUs, MIG profiles and instances, used by tests, the
// demo and operators trying gpufrac without a GPU. The fake libnvidia-ml.so.1 is built on this too,
// so the real NVML backend can be run end to end against the same machine. Schema: docs/machines.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

// Character-device majors a simulated host advertises in /proc/devices.
struct SimulatedMajors {
  std::int64_t nvidia = 195;
  std::int64_t nvidia_uvm = 510;
  std::int64_t nvidia_caps = 511;
};

struct SimulatedMachine {
  std::string file;
  // What NVML would report: device nodes not attached yet (see device_nodes.hpp), MIG profiles
  // only on GPUs whose MIG mode is enabled, everything in canonical_order (inventory_order.hpp).
  Inventory inventory;
  SimulatedMajors majors;
  // Per GPU (by index): its MIG profile table from the file, also while MIG mode is off (empty
  // when the GPU is not MIG-capable). The fake libnvidia-ml.so.1 keeps it to answer once MIG is on.
  std::vector<std::vector<MigProfile>> mig_profile_tables;
};

// Loads and validates a machine file: unknown keys, bad values, overlapping or impossible MIG
// instances are one-line errors with file:line and the key.
Result<SimulatedMachine> load_simulated_machine(const std::string& path);
// The machine file's text; a file that is not there is an error listing the shipped machines (in
// the named file's directory and in the installed <datadir>/gpufrac/machines).
Result<std::string> read_machine_file(const std::string& path);
Result<SimulatedMachine> load_simulated_machine_string(const std::string& yaml, const std::string& name);

}  // namespace gpufrac
