#include "core/inventory/gpu_link.hpp"

#include <algorithm>
#include <array>

#include "core/text.hpp"

namespace gpufrac {

namespace {

constexpr std::array<std::pair<PcieLink, const char*>, 6> kNames{{{PcieLink::pix, "PIX"},
                                                                  {PcieLink::pxb, "PXB"},
                                                                  {PcieLink::phb, "PHB"},
                                                                  {PcieLink::node, "NODE"},
                                                                  {PcieLink::sys, "SYS"},
                                                                  {PcieLink::unknown, "?"}}};

}  // namespace

const char* to_string(PcieLink link) {
  for (const auto& [l, name] : kNames)
    if (l == link) return name;
  return "?";
}

std::optional<PcieLink> pcie_link_from(std::string_view text) {
  for (const auto& [l, name] : kNames)
    if (text == name) return l;
  return std::nullopt;
}

std::string link_text(const GpuLink& link) {
  return link.nvlinks > 0 ? text::cat("NV", link.nvlinks) : to_string(link.pcie);
}

std::uint32_t link_distance(const GpuLink& link) {
  // NVLinks: 0 (kMaxNvlinks links) to kMaxNvlinks - 1 (one link); PCIe paths after them.
  if (link.nvlinks > 0) return kMaxNvlinks - std::min(link.nvlinks, kMaxNvlinks);
  return kMaxNvlinks + static_cast<std::uint32_t>(link.pcie);
}

}  // namespace gpufrac
