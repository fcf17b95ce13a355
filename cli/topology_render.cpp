#include "cli/topology_render.hpp"

#include <nlohmann/json.hpp>

#include "cli/table.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

constexpr const char* kLegend =
    "\nLegend:\n\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "  ?    = Not known (the driver did not say)\n";

std::string cell(const Gpu& from, const Gpu& to) {
  if (from.uuid == to.uuid) return "X";
  const GpuLink* l = from.link_to(to.uuid);
  return l ? link_text(*l) : "?";
}

std::string numa_text(const Gpu& g) {
  return g.numa_node ? text::cat(*g.numa_node) : "N/A";
}

}  // namespace

std::string render_topology(const Inventory& inv) {
  std::vector<std::string> header{""};
  for (const auto& g : inv.gpus) header.push_back(text::cat("GPU", g.index));
  header.push_back("NUMA Affinity");
  Table t(std::move(header));
  for (const auto& from : inv.gpus) {
    std::vector<std::string> row{text::cat("GPU", from.index)};
    for (const auto& to : inv.gpus) row.push_back(cell(from, to));
    row.push_back(numa_text(from));
    t.add(std::move(row));
  }
  return t.render() + kLegend;
}

nlohmann::json topology_json(const Inventory& inv) {
  nlohmann::json gpus = nlohmann::json::array(), links = nlohmann::json::array();
  for (const auto& from : inv.gpus) {
    gpus.push_back({{"index", from.index},
                    {"uuid", from.uuid},
                    {"numa_node", from.numa_node ? nlohmann::json(*from.numa_node) : nlohmann::json(nullptr)}});
    nlohmann::json row = nlohmann::json::array();
    for (const auto& to : inv.gpus) row.push_back(cell(from, to));
    links.push_back(std::move(row));
  }
  return {{"gpus", std::move(gpus)}, {"links", std::move(links)}};
}

}  // namespace gpufrac::cli
