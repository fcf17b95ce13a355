#include "k8s/slice_publisher.hpp"

#include <cstdlib>
#include <map>

#include "core/text.hpp"
#include "k8s/dra_devices.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;
constexpr const char* kSlices = "/apis/resource.k8s.io/v1/resourceslices";

std::string list_path(const std::string& node) {
  return text::cat(kSlices, "?fieldSelector=spec.driver%3D", kDriverName, "%2Cspec.nodeName%3D", node);
}

// "00003-gpufrac.io-node-1-x7k2p" -> 3; -1 for a name not made from our generateName.
long index_of(const std::string& name, const std::string& node) {
  const std::string tail = text::cat("-", kDriverName, "-", node, "-");
  if (name.size() <= 5 + tail.size() || name.compare(5, tail.size(), tail) != 0) return -1;
  const std::string head = name.substr(0, 5);
  if (head.find_first_not_of("0123456789abcdef") != std::string::npos) return -1;
  return std::strtol(head.c_str(), nullptr, 16);
}

Result<json> checked(const Result<ApiResponse>& r, const std::string& method, const std::string& path) {
  if (!r) return std::unexpected(r.error());
  if (r->status < 200 || r->status > 299) return user_error(describe_failure(method, path, *r));
  return r->body;
}

// Everything in spec but the generation: what decides whether a slice must be rewritten.
json comparable(json spec) {
  if (spec.contains("pool")) spec["pool"].erase("generation");
  return spec;
}

}  // namespace

Result<PublishReport> publish_slices(const ApiClient& api, const Config& cfg, SliceOptions o) {
  auto inventory = inventory_for_allocation(cfg);
  if (!inventory) return std::unexpected(inventory.error());
  const std::string list = list_path(o.node);
  auto found = checked(api.call("GET", list), "GET", list);
  if (!found) return std::unexpected(found.error());
  std::map<long, json> existing;
  std::vector<json> extra;
  std::int64_t generation = 0;
  for (const auto& item : found->value("items", json::array())) {
    const std::string name = item["metadata"].value("name", "");
    const long index = index_of(name, o.node);
    generation = std::max<std::int64_t>(generation, item["spec"]["pool"].value("generation", 0));
    if (index < 0 || existing.contains(index))
      extra.push_back(item);
    else
      existing[index] = item;
  }
  o.generation = std::max<std::int64_t>(generation, 1);
  auto wanted = render_resource_slices(*inventory, o);
  bool same = extra.empty() && existing.size() == wanted.size();
  for (std::size_t i = 0; same && i < wanted.size(); ++i)
    same = existing.contains(static_cast<long>(i)) &&
           comparable(existing[static_cast<long>(i)]["spec"]) == comparable(wanted[i]["spec"]) &&
           existing[static_cast<long>(i)]["spec"]["pool"].value("generation", 0) == o.generation;
  PublishReport report;
  if (same) return report;
  // Something changes: every slice of the pool gets the new generation.
  for (auto& w : wanted) w["spec"]["pool"]["generation"] = generation + 1;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    auto it = existing.find(static_cast<long>(i));
    if (it == existing.end()) {
      if (auto r = checked(api.call("POST", kSlices, wanted[i]), "POST", kSlices); !r)
        return std::unexpected(r.error());
      ++report.created;
      continue;
    }
    json updated = it->second;
    updated["spec"] = wanted[i]["spec"];
    if (wanted[i]["metadata"].contains("ownerReferences"))
      updated["metadata"]["ownerReferences"] = wanted[i]["metadata"]["ownerReferences"];
    const std::string path = text::cat(kSlices, "/", it->second["metadata"].value("name", ""));
    if (auto r = checked(api.call("PUT", path, updated), "PUT", path); !r) return std::unexpected(r.error());
    ++report.updated;
    existing.erase(it);
  }
  for (const auto& [index, item] : existing) extra.push_back(item);
  for (const auto& item : extra) {
    const json& m = item["metadata"];
    const std::string path = text::cat(kSlices, "/", m.value("name", ""));
    json options = {
        {"kind", "DeleteOptions"},
        {"apiVersion", "v1"},
        {"preconditions", {{"uid", m.value("uid", "")}, {"resourceVersion", m.value("resourceVersion", "")}}}};
    auto r = api.call("DELETE", path, options);
    if (r && r->status == 404) continue;  // gone already
    if (auto c = checked(r, "DELETE", path); !c) return std::unexpected(c.error());
    ++report.deleted;
  }
  return report;
}

}  // namespace gpufrac::dra
