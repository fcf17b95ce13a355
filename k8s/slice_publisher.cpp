#include "k8s/slice_publisher.hpp"

#include <cstdlib>
#include <map>

#include "core/text.hpp"
#include "k8s/dra_devices.hpp"
#include "k8s/slice_list.hpp"
#include "nvml/discover.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;
constexpr const char* kSlices = "/apis/resource.k8s.io/v1/resourceslices";

// "00003-gpufrac.io-node-1-x7k2p" -> 3; -1 for a name not made from our generateName.
long index_of(const std::string& name, const std::string& node) {
  const std::string tail = text::cat("-", kDriverName, "-", node, "-");
  if (name.size() <= 5 + tail.size() || name.compare(5, tail.size(), tail) != 0) return -1;
  const std::string head = name.substr(0, 5);
  if (head.find_first_not_of("0123456789abcdef") != std::string::npos) return -1;
  return std::strtol(head.c_str(), nullptr, 16);
}

// A 2xx answer, or the call's one-line error.
Result<> succeeded(const Result<ApiResponse>& r, const std::string& method, const std::string& path) {
  if (!r) return std::unexpected(r.error());
  if (r->status < 200 || r->status > 299) return user_error(describe_failure(method, path, *r));
  return {};
}

// The node's slices on the API server, every field the publisher uses checked.
Result<std::vector<ListedSlice>> list_slices(const ApiClient& api, const std::string& node) {
  const std::string path = slice_list_path(node);
  auto r = api.call("GET", path, nullptr, kMaxListBytes);
  if (!r) return std::unexpected(r.error());
  auto list = object_answer(*r, "GET", path);
  if (!list) return std::unexpected(list.error());
  return listed_slices(*list, "GET " + path);
}

// Everything in spec but the generation: what decides whether a slice must be rewritten.
json comparable(json spec) {
  if (spec.contains("pool") && spec["pool"].is_object()) spec["pool"].erase("generation");
  return spec;
}

// The node's slices on the API server, by their index prefix; unparsable or doubled ones are extra.
struct Found {
  std::map<long, ListedSlice> by_index;
  std::vector<ListedSlice> extra;
  std::int64_t generation = 0;  // the highest found
};

Found sort_found(std::vector<ListedSlice> listed, const std::string& node) {
  Found f;
  for (auto& item : listed) {
    const long index = index_of(item.name, node);
    f.generation = std::max(f.generation, item.generation);
    if (index < 0 || f.by_index.contains(index))
      f.extra.push_back(std::move(item));
    else
      f.by_index.emplace(index, std::move(item));
  }
  return f;
}

bool up_to_date(const Found& f, const std::vector<json>& wanted, std::int64_t generation) {
  if (!f.extra.empty() || f.by_index.size() != wanted.size()) return false;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    auto it = f.by_index.find(static_cast<long>(i));
    if (it == f.by_index.end() || it->second.generation != generation ||
        comparable(it->second.object.at("spec")) != comparable(wanted[i]["spec"]))
      return false;
  }
  return true;
}

// POST a missing slice, or PUT the wanted spec (and owner) over the one found at its index.
Result<> write_slice(const ApiClient& api, const json& wanted, const ListedSlice* existing, PublishReport& report) {
  if (existing == nullptr) {
    if (auto r = succeeded(api.call("POST", kSlices, wanted), "POST", kSlices); !r) return r;
    ++report.created;
    return {};
  }
  json updated = existing->object;
  updated["spec"] = wanted["spec"];
  if (wanted["metadata"].contains("ownerReferences"))
    updated["metadata"]["ownerReferences"] = wanted["metadata"]["ownerReferences"];
  const std::string path = text::cat(kSlices, "/", existing->name);
  if (auto r = succeeded(api.call("PUT", path, updated), "PUT", path); !r) return r;
  ++report.updated;
  return {};
}

// DELETE with uid and resourceVersion preconditions; one already gone counts as done.
Result<> delete_slice(const ApiClient& api, const ListedSlice& item, PublishReport& report) {
  const std::string path = text::cat(kSlices, "/", item.name);
  json options = {{"kind", "DeleteOptions"},
                  {"apiVersion", "v1"},
                  {"preconditions", {{"uid", item.uid}, {"resourceVersion", item.resource_version}}}};
  auto r = api.call("DELETE", path, options);
  if (r && r->status == 404) return {};
  if (auto c = succeeded(r, "DELETE", path); !c) return c;
  ++report.deleted;
  return {};
}

}  // namespace

std::string slice_list_path(const std::string& node) {
  return text::cat(kSlices, "?fieldSelector=spec.driver%3D", kDriverName, "%2Cspec.nodeName%3D", node);
}

Result<PublishReport> publish_slices(const ApiClient& api, const Config& cfg, SliceOptions o) {
  auto inventory = inventory_for_allocation(cfg, discover);
  if (!inventory) return std::unexpected(inventory.error());
  auto listed = list_slices(api, o.node);
  if (!listed) return std::unexpected(listed.error());
  Found found = sort_found(std::move(*listed), o.node);
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
  for (auto& [index, item] : found.by_index) found.extra.push_back(std::move(item));
  for (const auto& item : found.extra)
    if (auto r = delete_slice(api, item, report); !r) return std::unexpected(r.error());
  return report;
}

}  // namespace gpufrac::dra
