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

// The node's slices on the API server, by their index prefix; unparsable or doubled ones are extra.
struct Found {
  std::map<long, json> by_index;
  std::vector<json> extra;
  std::int64_t generation = 0;  // the highest found
};

Found sort_found(const json& list, const std::string& node) {
  Found f;
  for (const auto& item : list.value("items", json::array())) {
    const long index = index_of(item["metadata"].value("name", ""), node);
    f.generation = std::max<std::int64_t>(f.generation, item["spec"]["pool"].value("generation", 0));
    if (index < 0 || f.by_index.contains(index))
      f.extra.push_back(item);
    else
      f.by_index[index] = item;
  }
  return f;
}

bool up_to_date(const Found& f, const std::vector<json>& wanted, std::int64_t generation) {
  if (!f.extra.empty() || f.by_index.size() != wanted.size()) return false;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    auto it = f.by_index.find(static_cast<long>(i));
    if (it == f.by_index.end() || comparable(it->second["spec"]) != comparable(wanted[i]["spec"]) ||
        it->second["spec"]["pool"].value("generation", 0) != generation)
      return false;
  }
  return true;
}

// POST a missing slice, or PUT the wanted spec (and owner) over the one found at its index.
Result<> write_slice(const ApiClient& api, const json& wanted, const json* existing, PublishReport& report) {
  if (existing == nullptr) {
    if (auto r = checked(api.call("POST", kSlices, wanted), "POST", kSlices); !r) return std::unexpected(r.error());
    ++report.created;
    return {};
  }
  json updated = *existing;
  updated["spec"] = wanted["spec"];
  if (wanted["metadata"].contains("ownerReferences"))
    updated["metadata"]["ownerReferences"] = wanted["metadata"]["ownerReferences"];
  const std::string path = text::cat(kSlices, "/", existing->at("metadata").value("name", ""));
  if (auto r = checked(api.call("PUT", path, updated), "PUT", path); !r) return std::unexpected(r.error());
  ++report.updated;
  return {};
}

// DELETE with uid and resourceVersion preconditions; one already gone counts as done.
Result<> delete_slice(const ApiClient& api, const json& item, PublishReport& report) {
  const json& m = item["metadata"];
  const std::string path = text::cat(kSlices, "/", m.value("name", ""));
  json options = {
      {"kind", "DeleteOptions"},
      {"apiVersion", "v1"},
      {"preconditions", {{"uid", m.value("uid", "")}, {"resourceVersion", m.value("resourceVersion", "")}}}};
  auto r = api.call("DELETE", path, options);
  if (r && r->status == 404) return {};
  if (auto c = checked(r, "DELETE", path); !c) return std::unexpected(c.error());
  ++report.deleted;
  return {};
}

}  // namespace

Result<PublishReport> publish_slices(const ApiClient& api, const Config& cfg, SliceOptions o) {
  auto inventory = inventory_for_allocation(cfg);
  if (!inventory) return std::unexpected(inventory.error());
  const std::string list = list_path(o.node);
  auto listed = checked(api.call("GET", list), "GET", list);
  if (!listed) return std::unexpected(listed.error());
  Found found = sort_found(*listed, o.node);
  o.generation = std::max<std::int64_t>(found.generation, 1);
  auto wanted = render_resource_slices(*inventory, o);
  PublishReport report;
  if (up_to_date(found, wanted, o.generation)) return report;
  // Something changes: every slice of the pool gets the new generation.
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    wanted[i]["spec"]["pool"]["generation"] = found.generation + 1;
    auto it = found.by_index.find(static_cast<long>(i));
    if (auto r = write_slice(api, wanted[i], it == found.by_index.end() ? nullptr : &it->second, report); !r)
      return std::unexpected(r.error());
    if (it != found.by_index.end()) found.by_index.erase(it);
  }
  for (const auto& [index, item] : found.by_index) found.extra.push_back(item);
  for (const auto& item : found.extra)
    if (auto r = delete_slice(api, item, report); !r) return std::unexpected(r.error());
  return report;
}

}  // namespace gpufrac::dra
