#include "cdi/spec_file.hpp"

#include <yaml-cpp/yaml.h>

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 5> kNulls{"", "~", "null", "Null", "NULL"};
constexpr std::array<std::string_view, 11> kTrue{"y",  "Y",  "yes",  "Yes",  "YES", "on",
                                                 "On", "ON", "true", "True", "TRUE"};
constexpr std::array<std::string_view, 11> kFalse{"n",   "N",   "no",    "No",    "NO",   "off",
                                                  "Off", "OFF", "false", "False", "FALSE"};

template <std::size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& set) {
  for (auto v : set)
    if (v == s) return true;
  return false;
}

std::optional<Json> number(std::string_view s) {
  std::string_view d = s.starts_with("+") ? s.substr(1) : s;
  if (d.empty()) return std::nullopt;
  const char* end = d.data() + d.size();
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(d.data(), end, i); ec == std::errc() && p == end) return Json(i);
  std::uint64_t u = 0;
  if (auto [p, ec] = std::from_chars(d.data(), end, u); ec == std::errc() && p == end) return Json(u);
  if (d.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return std::nullopt;
  double f = 0;
  if (auto [p, ec] = std::from_chars(d.data(), end, f); ec == std::errc() && p == end && std::isfinite(f))
    return Json(f);
  return std::nullopt;
}

Json scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str") return Json(s);  // quoted, or !!str
  if (one_of(s, kNulls)) return Json(nullptr);
  if (one_of(s, kTrue)) return Json(true);
  if (one_of(s, kFalse)) return Json(false);
  if (auto v = number(s)) return *v;
  return Json(s);
}

Result<Json> convert(const YAML::Node& n, const std::string& where) {
  auto at = [&](const std::string& what) { return where.empty() ? what : where + ": " + what; };
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Json(nullptr);
    case YAML::NodeType::Scalar:
      return scalar(n);
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (std::size_t i = 0; i < n.size(); ++i) {
        auto v = convert(n[i], text::cat(where, "[", i, "]"));
        if (!v) return v;
        out.push_back(std::move(*v));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!it->first.IsScalar()) return user_error(at("a key is not a string"));
        const std::string key = it->first.Scalar();
        if (out.contains(key)) return user_error(at(text::cat("key ", text::quote(key), " appears twice")));
        auto v = convert(it->second, where.empty() ? key : where + "." + key);
        if (!v) return v;
        out[key] = std::move(*v);
      }
      return out;
    }
  }
  return Json(nullptr);
}

}  // namespace

Result<Json> parse_spec_text(const std::string& content, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(content);
  } catch (const YAML::Exception& e) {
    return user_error(
        text::cat(name, ": not YAML or JSON: line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
  }
  try {
    auto v = convert(root, "");
    if (!v) return std::unexpected(std::move(v.error().wrap(name)));
    return v;
  } catch (const YAML::Exception& e) {
    return user_error(text::cat(name, ": not YAML or JSON: ", e.msg));
  }
}

Result<Json> read_spec_file(const std::string& path) {
  auto content = fs::read_file(path, kMaxSpecBytes);
  if (!content) {
    Error e = content.error();
    e.kind = ErrorKind::user;
    return std::unexpected(std::move(e));
  }
  return parse_spec_text(*content, path);
}

Result<> write_spec_file(const std::string& path, std::string_view content) {
  if (auto r = fs::make_dirs(fs::dirname(path), 0755); !r) return r;
  return fs::write_file_atomic(path, content, 0644);
}

bool is_spec_file_name(std::string_view name) {
  return name.size() > 5 && (name.ends_with(".yaml") || name.ends_with(".json"));
}

}  // namespace gpufrac::cdi
