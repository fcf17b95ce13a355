#include "core/config/yaml_util.hpp"

#include <charconv>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::yaml {

std::unexpected<Error> Located::fail(std::string_view problem) const {
  std::string where = line() > 0 ? text::cat(file, ":", line()) : file;
  if (!key.empty()) where += ": " + key;
  return user_error(where + ": " + std::string(problem));
}

Located Located::child(const std::string& name) const {
  return Located{node[name], file, key.empty() ? name : key + "." + name};
}

Located Located::item(std::size_t index) const {
  return Located{node[index], file, text::cat(key, "[", index, "]")};
}

Result<Located> load_string(const std::string& content, const std::string& name) {
  try {
    YAML::Node root = YAML::Load(content);
    if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    return Located{root, name, ""};
  } catch (const YAML::Exception& e) {
    return user_error(text::cat(name, ":", e.mark.line + 1, ":", e.mark.column + 1, ": invalid YAML: ", e.msg));
  }
}

Result<Located> load_file(const std::string& path) {
  auto content = fs::read_file(path, 4u << 20);
  if (!content) return std::unexpected(Error{content.error().message, content.error().err, ErrorKind::user});
  return load_string(*content, path);
}

Result<> require_map(const Located& n) {
  if (!n.node.IsMap()) return n.fail("must be a mapping of keys to values");
  return {};
}

Result<> require_sequence(const Located& n) {
  if (!n.node.IsSequence()) return n.fail("must be a list");
  return {};
}

Result<> check_keys(const Located& map, std::initializer_list<std::string_view> allowed) {
  if (auto r = require_map(map); !r) return r;
  for (const auto& kv : map.node) {
    const std::string name = kv.first.Scalar();
    bool known = false;
    for (auto a : allowed) known = known || a == name;
    if (known) continue;
    std::vector<std::string> names(allowed.begin(), allowed.end());
    Located at{kv.first, map.file, map.key.empty() ? name : map.key + "." + name};
    return at.fail("unknown key (accepted" + std::string(map.key.empty() ? "" : " under " + map.key) + ": " +
                   text::join(names, ", ") + ")");
  }
  return {};
}

Result<std::string> as_string(const Located& n) {
  if (!n.node.IsScalar()) return n.fail("must be a string");
  return n.node.Scalar();
}

Result<bool> as_bool(const Located& n) {
  if (n.node.IsScalar()) {
    const std::string& s = n.node.Scalar();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  return n.fail("must be true or false");
}

Result<std::uint64_t> as_u64(const Located& n) {
  if (n.node.IsScalar())
    if (auto v = text::parse_u64(n.node.Scalar())) return *v;
  return n.fail("must be a non-negative integer");
}

Result<double> as_double(const Located& n) {
  if (n.node.IsScalar()) {
    const std::string& s = n.node.Scalar();
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
    if (!s.empty() && ec == std::errc() && ptr == s.data() + s.size()) return v;
  }
  return n.fail("must be a decimal number, e.g. 1.5");
}

Result<std::string> as_choice(const Located& n, std::initializer_list<std::string_view> choices) {
  std::vector<std::string> names(choices.begin(), choices.end());
  if (n.node.IsScalar())
    for (auto c : choices)
      if (n.node.Scalar() == c) return std::string(c);
  std::string got = n.node.IsScalar() ? text::quote(n.node.Scalar()) + " is not accepted" : "must be a string";
  return n.fail(got + " (accepted: " + text::join(names, ", ") + ")");
}

Result<std::vector<std::string>> as_string_list(const Located& n) {
  if (auto r = require_sequence(n); !r) return std::unexpected(r.error());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.node.size(); ++i) {
    auto s = as_string(n.item(i));
    if (!s) return std::unexpected(s.error());
    out.push_back(*s);
  }
  return out;
}

}  // namespace gpufrac::yaml
