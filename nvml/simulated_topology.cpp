// The `topology:` of a simulated machine file (docs/machines.md "Topology"): the matrix
// `nvidia-smi topo -m` prints and each GPU's NUMA node. Without one, the GPUs sit behind one PCIe
// host bridge on NUMA node 0 (every pair PHB, no NVLink), as on a workstation or a small VM.
#include "core/text.hpp"
#include "nvml/simulated_detail.hpp"

namespace gpufrac::sim {

using yaml::Located;

namespace {

constexpr const char* kCellForm = "X on the diagonal, else NV<links> (1 to 18), PIX, PXB, PHB, NODE or SYS";

// One cell: NV<n>, or a PCIe path (the PCIe path of an NVLink pair comes from the NUMA nodes).
Result<GpuLink> parse_cell(const Located& n) {
  auto s = yaml::as_string(n);
  if (!s) return std::unexpected(s.error());
  GpuLink link;
  if (s->starts_with("NV")) {
    auto count = text::parse_u64(std::string_view(*s).substr(2));
    if (!count || *count == 0 || *count > kMaxNvlinks || (*s)[2] == '0')
      return n.fail(text::cat(text::quote(*s), " is not a link; use ", kCellForm));
    link.nvlinks = static_cast<std::uint32_t>(*count);
    return link;
  }
  auto pcie = pcie_link_from(*s);
  if (!pcie || *pcie == PcieLink::unknown) return n.fail(text::cat(text::quote(*s), " is not a link; use ", kCellForm));
  link.pcie = *pcie;
  return link;
}

Result<std::vector<std::uint32_t>> parse_numa(const Located& n, std::size_t gpus) {
  if (auto r = yaml::require_sequence(n); !r) return std::unexpected(r.error());
  if (n.node.size() != gpus) return n.fail(text::cat("lists ", n.node.size(), " NUMA nodes for ", gpus, " GPUs"));
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < gpus; ++i) {
    std::uint32_t v = 0;
    GPUFRAC_TRY_ASSIGN(v, u32(n.item(i), 255));
    out.push_back(v);
  }
  return out;
}

// Row i of the matrix: X at i, a link elsewhere; the same link as row j's cell i.
Result<> parse_row(const Located& row, std::size_t i, std::vector<Gpu>& gpus, const std::vector<std::uint32_t>& numa) {
  if (auto r = yaml::require_sequence(row); !r) return r;
  if (row.node.size() != gpus.size())
    return row.fail(text::cat("has ", row.node.size(), " cells for ", gpus.size(), " GPUs"));
  for (std::size_t j = 0; j < gpus.size(); ++j) {
    const Located cell = row.item(j);
    if (i == j) {
      if (cell.node.IsScalar() && cell.node.Scalar() == "X") continue;
      return cell.fail(text::cat("is GPU ", i, " itself; use X"));
    }
    GpuLink link;
    GPUFRAC_TRY_ASSIGN(link, parse_cell(cell));
    if (link.nvlinks > 0) link.pcie = numa[i] == numa[j] ? PcieLink::node : PcieLink::sys;
    link.uuid = gpus[j].uuid;
    if (j < i) {
      const GpuLink* mirror = gpus[j].link_to(gpus[i].uuid);
      if (mirror->nvlinks != link.nvlinks || mirror->pcie != link.pcie)
        return cell.fail(text::cat("differs from GPU ", j, "'s link to GPU ", i, " (", link_text(*mirror),
                                   "); the matrix must be symmetric"));
    }
    gpus[i].links.push_back(std::move(link));
  }
  return {};
}

}  // namespace

Result<> parse_topology(const Located& n, std::vector<Gpu>& gpus) {
  if (!n.node) {
    for (auto& g : gpus) {
      g.numa_node = 0;
      for (const auto& o : gpus)
        if (o.uuid != g.uuid) g.links.push_back({o.uuid, 0, PcieLink::phb});
    }
    return {};
  }
  if (auto r = yaml::check_keys(n, {"links", "numa"}); !r) return r;
  if (!n.node["links"] || !n.node["numa"]) return n.fail("needs links (the topo -m matrix) and numa (one per GPU)");
  auto numa = parse_numa(n.child("numa"), gpus.size());
  if (!numa) return std::unexpected(numa.error());
  const Located rows = n.child("links");
  if (auto r = yaml::require_sequence(rows); !r) return r;
  if (rows.node.size() != gpus.size())
    return rows.fail(text::cat("has ", rows.node.size(), " rows for ", gpus.size(), " GPUs"));
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].numa_node = (*numa)[i];
    if (auto r = parse_row(rows.item(i), i, gpus, *numa); !r) return r;
  }
  return {};
}

}  // namespace gpufrac::sim
