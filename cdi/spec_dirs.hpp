// What spec directories offer, resolved as the CDI library's cache does (pkg/cdi/cache.go): the
// *.yaml and *.json files of each directory (no recursion, in name order), a later directory taking
// priority over an earlier one (/var/run/cdi over /etc/cdi by default); a spec that fails
// validation is skipped; a device defined twice at the same priority is a conflict and offered by
// neither definition.
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::cdi {

struct ListedDevice {
  std::string name;  // fully qualified: vendor/class=name
  std::string file;  // the spec that defines it
};

struct Listing {
  std::vector<ListedDevice> devices;  // by directory priority (highest first), file, order in the file
  std::vector<std::string> warnings;  // skipped files, conflicts (one line each)
};

// A missing directory offers nothing; an unreadable one is a warning.
Listing list_spec_dirs(const std::vector<std::string>& dirs);

}  // namespace gpufrac::cdi
