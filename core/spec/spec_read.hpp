// config.json as gpufrac-runtime reads it: the fast path's text test (core/spec/spec_scan.hpp) decides
// on the whole file, never on the part that fits the bound. A file within the bound is read whole;
// a larger one is scanned to its end in fixed pieces (memory stays bounded), and a spec that names
// gpufrac there is refused, never passed through: runc would start it without its share. A spec
// whose text cannot be examined (not a regular file, unreadable, too large to scan) may name
// gpufrac, so it is refused too. Only a spec known not to name gpufrac, or no file at all, goes to
// the runtime untouched (the runtime reports its own errors).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace gpufrac {

struct SpecBounds {
  std::size_t max_bytes = 16u << 20;        // read whole and parsed (bundle::kMaxConfigBytes)
  std::size_t max_scan_bytes = 256u << 20;  // scanned at most: beyond, gpufrac cannot tell
};

struct SpecText {
  bool named = false;               // may_name_gpufrac of the whole file
  std::optional<std::string> text;  // the file, when it exists and holds at most max_bytes
};

// - no file at the path (ENOENT, ENOTDIR), or a directory: {false, nullopt};
// - a regular file of at most max_bytes: {may_name_gpufrac(text), text};
// - a larger regular file that does not name gpufrac: {false, nullopt};
// - one that names gpufrac (anywhere, the tail included): a refusal (exit 1);
// - larger than max_scan_bytes, not a regular file (FIFO, device, socket): a refusal (exit 1);
// - an open or read error: an error (exit 2).
Result<SpecText> read_spec(const std::string& path, const SpecBounds& bounds = {});

}  // namespace gpufrac
