// A minimal TOML reader for editing container engines' configuration files in place. It splits a
// document into statements (table headers, key/value pairs, blank and comment lines) and keeps each
// statement's exact source text, so a file can be rewritten with one statement changed and
// everything else, comments and layout included, byte for byte. Values are not decoded except the
// few scalar forms the configurators read (integers, strings, arrays of strings).
//
// Why not a TOML library: Debian 12 has toml++ and toml11, but both re-serialise the whole document
// (comments and layout of an operator's config.toml lost); what is needed here is one top-level key
// edited and some tables copied verbatim, and a dependency for that is not worth it.
//
// Supported: bare, "basic" and 'literal' keys, dotted keys, [tables], [[arrays of tables]],
// basic, literal and multi-line strings, arrays and inline tables spanning lines, comments.
// Syntax errors are "<name>:<line>: <problem>".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::toml {

using KeyPath = std::vector<std::string>;

enum class StatementKind { blank, table, array_table, key_value };

struct Statement {
  StatementKind kind = StatementKind::blank;
  KeyPath table;         // the table the statement is in; for headers the header's path
  KeyPath key;           // key_value: the (dotted) key, relative to table
  std::string value;     // key_value: the value's text, without the trailing comment
  std::string raw;       // the exact source text, through the final newline
  int line = 0;          // first line, 1-based
  KeyPath full() const;  // table + key
};

Result<std::vector<Statement>> parse(std::string_view text, const std::string& name);

std::optional<std::int64_t> integer_value(std::string_view value);
std::optional<std::string> string_value(std::string_view value);
std::optional<std::vector<std::string>> string_array_value(std::string_view value);

// A TOML basic string: "..." with \", \\ and control characters escaped.
std::string quote(std::string_view s);
std::string string_array(const std::vector<std::string>& items);
// plugins."io.containerd.grpc.v1.cri".containerd: bare where possible, quoted otherwise.
std::string key_path_text(const KeyPath& path);
bool has_prefix(const KeyPath& path, const KeyPath& prefix);

}  // namespace gpufrac::toml
