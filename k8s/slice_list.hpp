// The node's ResourceSlices as the API server lists them, read for the publisher
// (k8s/slice_publisher.hpp) with every field it uses checked first: an answer cut short, of the
// wrong types or without a field is one error naming the item and the field, and the publisher
// tries again at the next resync. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gpufrac::dra {

struct ListedSlice {
  std::string name;              // metadata.name: a DNS subdomain (it goes into a URL)
  std::string uid;               // metadata.uid
  std::string resource_version;  // metadata.resourceVersion
  std::int64_t generation = 0;   // spec.pool.generation
  nlohmann::json object;         // the slice as listed: metadata and spec are objects, spec.pool too
};

// One ResourceSlice (an item of a LIST, or the answer of a GET, POST or PUT). `what` names it in
// errors ("GET <path>: items[2]").
Result<ListedSlice> listed_slice(const nlohmann::json& item, std::string_view what);

// A ResourceSliceList: an object whose "items" is a list (null: empty) of ResourceSlices.
Result<std::vector<ListedSlice>> listed_slices(const nlohmann::json& list, std::string_view what);

}  // namespace gpufrac::dra
