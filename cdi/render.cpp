#include "cdi/render.hpp"

#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

using Json = nlohmann::ordered_json;

bool plain_key(std::string_view k) {
  if (k.empty() || !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z'))) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// A scalar, or an empty collection, on one line. Strings are JSON-quoted (a valid YAML double-quoted
// scalar); numbers, booleans and null as JSON writes them.
std::string inline_value(const Json& v) {
  if (v.is_object() && v.empty()) return "{}";
  if (!v.is_array()) return v.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out = "[";
  for (const auto& item : v) out += (out.size() > 1 ? ", " : "") + inline_value(item);
  return out + "]";
}

// A list of scalars is written inline, in flow style: ["ro", "nosuid", "bind"].
bool is_flow_list(const Json& v) {
  if (!v.is_array()) return false;
  for (const auto& item : v)
    if (item.is_array() || item.is_object()) return false;
  return true;
}

bool is_block(const Json& v) {
  return (v.is_object() || v.is_array()) && !v.empty() && !is_flow_list(v);
}

void emit(std::string& out, const Json& v, std::size_t indent);

std::string key_text(const std::string& k) {
  return plain_key(k) ? k : Json(k).dump();
}

void emit_map(std::string& out, const Json& v, std::size_t indent, bool first_inline) {
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!(first && first_inline)) out.append(indent, ' ');
    first = false;
    out += key_text(it.key()) + ":";
    if (!is_block(it.value())) {
      out += " " + inline_value(it.value()) + "\n";
      continue;
    }
    out += "\n";
    // Sequences under a key sit at the key's indentation (the Kubernetes style); maps go 2 deeper.
    emit(out, it.value(), it.value().is_array() ? indent : indent + 2);
  }
}

void emit_seq(std::string& out, const Json& v, std::size_t indent) {
  for (const auto& item : v) {
    out.append(indent, ' ');
    out += "-";
    if (!is_block(item)) {
      out += " " + inline_value(item) + "\n";
    } else if (item.is_object()) {
      out += " ";
      emit_map(out, item, indent + 2, true);
    } else {
      out += "\n";
      emit_seq(out, item, indent + 2);
    }
  }
}

void emit(std::string& out, const Json& v, std::size_t indent) {
  if (v.is_object())
    emit_map(out, v, indent, false);
  else if (v.is_array())
    emit_seq(out, v, indent);
  else
    out.append(indent, ' ') += inline_value(v) + "\n";
}

}  // namespace

std::string render_json(const Json& value) {
  return value.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string render_yaml(const Json& value, std::string_view comment) {
  std::string out;
  if (!comment.empty())
    for (const auto& line : text::split(comment, '\n')) out += line.empty() ? "#\n" : "# " + line + "\n";
  if (!is_block(value)) return out + inline_value(value) + "\n";
  emit(out, value, 0);
  return out;
}

std::string render(const Json& value, Format format, std::string_view comment) {
  return format == Format::json ? render_json(value) : render_yaml(value, comment);
}

}  // namespace gpufrac::cdi
