// A unified diff of one file's change, for `gpufrac runtime configure --dry-run` (pure).
#pragma once

#include <optional>
#include <string>

namespace gpufrac::engine_config {

// "--- <path>" (or "--- /dev/null" for a new file), "+++ <path>", then hunks "@@ -a,b +c,d @@" with
// three lines of context, as diff -u prints them. "" when before == after.
std::string unified_diff(const std::string& path, const std::optional<std::string>& before, const std::string& after);

}  // namespace gpufrac::engine_config
