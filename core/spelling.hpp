// "Did you mean": the closest known word to a mistyped one (CLI commands and options, the
// environment request variables).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufrac {

// Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to word when it is close enough to be a typo (distance at most 2, and less
// than half the word) or word is a prefix of it; ties go to the first candidate.
std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace gpufrac
