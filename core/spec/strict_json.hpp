// JSON that gpufrac and the runtime cannot read differently (docs/architecture.md "Security"): the
// hook and the wrapper read config.json and the OCI state that runc also reads, and a document a
// Go decoder and nlohmann::json would understand differently (a duplicate key: Go merges or keeps
// the last, nlohmann keeps the last; runc reads one "linux", gpufrac another) is refused, never
// passed through. A SAX pass checks the document before any DOM is built, so size, nesting depth
// and value count are bounded before memory is spent: duplicate keys at any level, trailing data,
// invalid UTF-8 and lone surrogates (nlohmann's lexer) are one-line errors naming the place.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gpufrac {

struct JsonLimits {
  std::size_t max_bytes = 16u << 20;  // 16 MiB: a runtime's config.json is a few kB
  std::size_t max_depth = 64;         // an OCI config nests 6 levels deep
  std::size_t max_values = 1u << 20;  // scalars, arrays and objects together
};

// One step of the path to a value: an object member (its key) or an array element (its index).
struct JsonPathStep {
  bool object = false;
  std::string_view key;
  std::size_t index = 0;
};
// Sees every string value during the check, with the path to it (outermost first): a reader that
// needs a few strings gets them from the one pass, without a DOM.
using JsonStringVisitor = std::function<void(const std::vector<JsonPathStep>& path, const std::string& value)>;

// `what` names the document in errors ("config.json", "OCI state on stdin").
Result<> check_strict_json(std::string_view text, std::string_view what, const JsonLimits& limits = {},
                           const JsonStringVisitor* strings = nullptr);
// check_strict_json, then the DOM.
Result<nlohmann::json> parse_strict_json(std::string_view text, std::string_view what, const JsonLimits& limits = {});

}  // namespace gpufrac
