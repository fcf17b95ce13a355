// `gpufrac info --topology`: the GPUs' links as `nvidia-smi topo -m` prints them (the matrix, each
// GPU's NUMA node, the legend), and as JSON. Pure: from the inventory (core/inventory/gpu_link.hpp).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/inventory/inventory.hpp"

namespace gpufrac::cli {

std::string render_topology(const Inventory& inv);
// {"gpus": [{"index", "uuid", "numa_node"}], "links": [["X", "NV12", ...], ...]}: row i, column j
// is the link of GPU i to GPU j as the matrix shows it.
nlohmann::json topology_json(const Inventory& inv);

}  // namespace gpufrac::cli
