#include "k8s/slice_list.hpp"

#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

using json = nlohmann::json;

// The member `key` of an object, or nullptr.
const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::unexpected<Error> bad(std::string_view what, std::string_view field, std::string_view problem) {
  return user_error(text::cat(what, ": ", field, ": ", problem, "; a ResourceSliceList holds ResourceSlices"));
}

Result<std::string> string_member(const json& object, const char* key, std::string_view what, std::string_view field) {
  const json* v = member(object, key);
  if (v == nullptr) return bad(what, field, "missing");
  if (!v->is_string() || v->get_ref<const std::string&>().empty()) return bad(what, field, "not a non-empty string");
  return v->get<std::string>();
}

// A DNS subdomain, as the API server names objects: nothing else reaches a URL path.
bool object_name(const std::string& s) {
  return s.size() <= 253 && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") == std::string::npos;
}

}  // namespace

Result<ListedSlice> listed_slice(const json& item, std::string_view what) {
  if (!item.is_object()) return bad(what, "the item", "not an object");
  const json* meta = member(item, "metadata");
  if (meta == nullptr || !meta->is_object()) return bad(what, "metadata", "not an object");
  ListedSlice s;
  GPUFRAC_TRY_ASSIGN(s.name, string_member(*meta, "name", what, "metadata.name"));
  if (!object_name(s.name)) return bad(what, "metadata.name", text::cat(text::quote(s.name), " is not an object name"));
  GPUFRAC_TRY_ASSIGN(s.uid, string_member(*meta, "uid", what, "metadata.uid"));
  GPUFRAC_TRY_ASSIGN(s.resource_version, string_member(*meta, "resourceVersion", what, "metadata.resourceVersion"));
  const json* spec = member(item, "spec");
  if (spec == nullptr || !spec->is_object()) return bad(what, "spec", "not an object");
  const json* pool = member(*spec, "pool");
  if (pool == nullptr || !pool->is_object()) return bad(what, "spec.pool", "not an object");
  const json* generation = member(*pool, "generation");
  constexpr std::int64_t kMaxGeneration = std::int64_t{1} << 62;  // the publisher adds one
  if (generation == nullptr || !generation->is_number_integer() || generation->get<std::int64_t>() < 0 ||
      generation->get<std::int64_t>() > kMaxGeneration)
    return bad(what, "spec.pool.generation", "not an integer from 0 to 2^62");
  s.generation = generation->get<std::int64_t>();
  s.object = item;
  return s;
}

Result<std::vector<ListedSlice>> listed_slices(const json& list, std::string_view what) {
  if (!list.is_object()) return bad(what, "the list", "not an object");
  const json* items = member(list, "items");
  if (items == nullptr) return bad(what, "items", "missing");
  if (items->is_null()) return std::vector<ListedSlice>{};
  if (!items->is_array()) return bad(what, "items", "not a list");
  std::vector<ListedSlice> out;
  out.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    auto s = listed_slice((*items)[i], text::cat(what, ": items[", i, "]"));
    if (!s) return std::unexpected(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace gpufrac::dra
