#include "engine-config/toml_lite.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "core/text.hpp"

namespace gpufrac::toml {

namespace {

bool is_bare(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Reads statements one at a time. Positions are byte offsets into the text.
class Reader {
 public:
  Reader(std::string_view text, const std::string& name) : t_(text), name_(name) {}
  bool done() const { return p_ >= t_.size(); }
  Result<Statement> next(const KeyPath& table);
  // A single-line basic or literal string starting at p_ (decoded); used by the value helpers.
  Result<std::string> string_at();
  std::size_t pos() const { return p_; }

 private:
  char peek(std::size_t off = 0) const { return p_ + off < t_.size() ? t_[p_ + off] : '\0'; }
  bool at(std::string_view s) const { return t_.substr(p_).starts_with(s); }
  void skip_ws() {
    while (peek() == ' ' || peek() == '\t') ++p_;
  }
  void skip_comment() {
    while (!done() && peek() != '\n') ++p_;
  }
  std::unexpected<Error> fail(std::string_view problem) const {
    int line =
        1 + static_cast<int>(std::count(t_.begin(), t_.begin() + static_cast<long>(std::min(p_, t_.size())), '\n'));
    return user_error(text::cat(name_, ":", line, ": ", problem));
  }
  Result<std::string> key_part();
  Result<KeyPath> key_path(char end);
  Result<> end_of_line();
  Result<> skip_value(bool nested);
  Result<> skip_multiline(std::string_view delim, bool escapes);
  Result<> skip_container(char close);
  Result<Statement> header();

  std::string_view t_;
  std::string name_;
  std::size_t p_ = 0;
};

Result<std::string> Reader::string_at() {
  const char q = peek();
  ++p_;
  std::string out;
  while (!done() && peek() != q && peek() != '\n') {
    char c = t_[p_++];
    if (q == '\'' || c != '\\') {
      out.push_back(c);
      continue;
    }
    if (done()) break;
    char e = t_[p_++];
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case '"':
      case '\\':
        out.push_back(e);
        break;
      case 'u': {
        auto v = p_ + 4 <= t_.size() ? std::optional(t_.substr(p_, 4)) : std::nullopt;
        std::uint32_t cp = 0;
        if (!v || std::from_chars(v->data(), v->data() + 4, cp, 16).ptr != v->data() + 4) return fail("bad \\u escape");
        append_utf8(out, cp);
        p_ += 4;
        break;
      }
      default:
        return fail("unknown escape in a string");
    }
  }
  if (peek() != q) return fail("unterminated string");
  ++p_;
  return out;
}

Result<std::string> Reader::key_part() {
  if (peek() == '"' || peek() == '\'') return string_at();
  std::size_t start = p_;
  while (is_bare(peek())) ++p_;
  if (p_ == start) return fail("expected a key");
  return std::string(t_.substr(start, p_ - start));
}

Result<KeyPath> Reader::key_path(char end) {
  KeyPath path;
  for (;;) {
    skip_ws();
    auto part = key_part();
    if (!part) return std::unexpected(part.error());
    path.push_back(std::move(*part));
    skip_ws();
    if (peek() == '.') {
      ++p_;
      continue;
    }
    if (peek() == end) return path;
    return fail(text::cat("expected '.' or '", end, "' after a key"));
  }
}

Result<> Reader::end_of_line() {
  skip_ws();
  if (peek() == '#') skip_comment();
  if (peek() == '\r') ++p_;
  if (done()) return {};
  if (peek() != '\n') return fail("unexpected text after the value");
  ++p_;
  return {};
}

Result<> Reader::skip_multiline(std::string_view delim, bool escapes) {
  p_ += 3;
  while (!done()) {
    if (escapes && peek() == '\\') {
      p_ += 2;
      continue;
    }
    if (at(delim)) {
      p_ += 3;
      for (int i = 0; i < 2 && peek() == delim[0]; ++i) ++p_;  // """" ends with a quote inside
      return {};
    }
    ++p_;
  }
  return fail("unterminated multi-line string");
}

Result<> Reader::skip_container(char close) {
  ++p_;
  for (;;) {
    while (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r' || peek() == ',') ++p_;
    if (peek() == '#') skip_comment();
    if (done()) return fail(text::cat("unterminated ", close == ']' ? "array" : "inline table"));
    if (peek() == '\n' || peek() == '#') continue;
    if (peek() == close) {
      ++p_;
      return {};
    }
    if (close == '}') {
      if (auto k = key_path('='); !k) return std::unexpected(k.error());
      ++p_;
      skip_ws();
    }
    if (auto r = skip_value(true); !r) return r;
  }
}

Result<> Reader::skip_value(bool nested) {
  if (at("\"\"\"")) return skip_multiline("\"\"\"", true);
  if (at("'''")) return skip_multiline("'''", false);
  if (peek() == '"' || peek() == '\'') {
    auto s = string_at();
    return s ? Result<>{} : std::unexpected(s.error());
  }
  if (peek() == '[') return skip_container(']');
  if (peek() == '{') return skip_container('}');
  // A bare scalar: number, boolean or date; "1979-05-27 07:32:00" is the one with a space inside.
  auto scan = [&] {
    while (!done() && peek() != '\n' && peek() != '#' && peek() != '\r' && peek() != ' ' && peek() != '\t' &&
           !(nested && (peek() == ',' || peek() == ']' || peek() == '}')))
      ++p_;
  };
  const std::size_t start = p_;
  scan();
  if (p_ == start) return fail("expected a value");
  const std::string_view token = t_.substr(start, p_ - start);
  bool date = token.size() == 10 && token[4] == '-' && token[7] == '-';
  if (date && peek() == ' ' && peek(1) >= '0' && peek(1) <= '9') {
    ++p_;
    scan();
  }
  return {};
}

Result<Statement> Reader::header() {
  Statement s;
  const bool array = at("[[");
  p_ += array ? 2 : 1;
  auto path = key_path(']');
  if (!path) return std::unexpected(path.error());
  ++p_;
  if (array && peek() != ']') return fail("expected ']]'");
  if (array) ++p_;
  s.kind = array ? StatementKind::array_table : StatementKind::table;
  s.table = std::move(*path);
  if (auto r = end_of_line(); !r) return std::unexpected(r.error());
  return s;
}

Result<Statement> Reader::next(const KeyPath& table) {
  const std::size_t start = p_;
  skip_ws();
  Result<Statement> s = Statement{};
  if (done() || peek() == '\n' || peek() == '\r' || peek() == '#') {
    s->table = table;
    if (auto r = end_of_line(); !r) return std::unexpected(r.error());
  } else if (peek() == '[') {
    s = header();
  } else {
    auto key = key_path('=');
    if (!key) return std::unexpected(key.error());
    ++p_;
    skip_ws();
    const std::size_t value_start = p_;
    if (auto r = skip_value(false); !r) return std::unexpected(r.error());
    std::string_view v = t_.substr(value_start, p_ - value_start);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    s->kind = StatementKind::key_value;
    s->table = table;
    s->key = std::move(*key);
    s->value = std::string(v);
    if (auto r = end_of_line(); !r) return std::unexpected(r.error());
  }
  if (s) s->raw = std::string(t_.substr(start, p_ - start));
  return s;
}

}  // namespace

KeyPath Statement::full() const {
  KeyPath out = table;
  out.insert(out.end(), key.begin(), key.end());
  return out;
}

Result<std::vector<Statement>> parse(std::string_view text, const std::string& name) {
  Reader r(text, name);
  std::vector<Statement> out;
  KeyPath table;
  int line = 1;
  while (!r.done()) {
    auto s = r.next(table);
    if (!s) return std::unexpected(s.error());
    s->line = line;
    line += static_cast<int>(std::count(s->raw.begin(), s->raw.end(), '\n'));
    if (s->kind == StatementKind::table || s->kind == StatementKind::array_table) table = s->table;
    out.push_back(std::move(*s));
  }
  return out;
}

std::optional<std::int64_t> integer_value(std::string_view value) {
  std::string digits;
  for (char c : value)
    if (c != '_') digits.push_back(c);
  if (!digits.empty() && digits.front() == '+') digits.erase(0, 1);
  return text::parse_i64(digits);
}

std::optional<std::string> string_value(std::string_view value) {
  if (value.empty() || (value.front() != '"' && value.front() != '\'') || value.starts_with("\"\"\"") ||
      value.starts_with("'''"))
    return std::nullopt;
  std::string copy(value);
  Reader r(copy, "");
  auto s = r.string_at();
  if (!s || r.pos() != copy.size()) return std::nullopt;
  return *s;
}

std::optional<std::vector<std::string>> string_array_value(std::string_view value) {
  if (value.size() < 2 || value.front() != '[' || value.back() != ']') return std::nullopt;
  std::vector<std::string> out;
  std::string body(value.substr(1, value.size() - 2));
  std::size_t i = 0;
  auto skip = [&] {
    while (i < body.size() &&
           (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r' || body[i] == '#')) {
      if (body[i] == '#')
        while (i < body.size() && body[i] != '\n') ++i;
      else
        ++i;
    }
  };
  for (skip(); i < body.size(); skip()) {
    Reader r(std::string_view(body).substr(i), "");
    if (body[i] != '"' && body[i] != '\'') return std::nullopt;
    auto s = r.string_at();
    if (!s) return std::nullopt;
    out.push_back(std::move(*s));
    i += r.pos();
    skip();
    if (i < body.size() && body[i] != ',') return std::nullopt;
    if (i < body.size()) ++i;
  }
  return out;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

std::string string_array(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& i : items) quoted.push_back(quote(i));
  return "[" + text::join(quoted, ", ") + "]";
}

std::string key_path_text(const KeyPath& path) {
  std::vector<std::string> parts;
  for (const auto& p : path) parts.push_back(!p.empty() && std::all_of(p.begin(), p.end(), is_bare) ? p : quote(p));
  return text::join(parts, ".");
}

bool has_prefix(const KeyPath& path, const KeyPath& prefix) {
  return path.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

}  // namespace gpufrac::toml
