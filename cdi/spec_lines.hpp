// Where each value of a spec file is: its location as `cdi validate` names it
// (devices[0].containerEdits.hooks[1].path) -> the line of its key (or, in a sequence, of the item),
// so every problem can be reported as file:line.
#pragma once

#include <map>
#include <string>

namespace gpufrac::cdi {

using SpecLines = std::map<std::string, int>;

// Empty when the text is not YAML (parse_spec_text reports that).
SpecLines spec_lines(const std::string& text);
// The line of the location, else of its closest parent that has one; 1 for the document.
int line_of(const SpecLines& lines, std::string location);

}  // namespace gpufrac::cdi
