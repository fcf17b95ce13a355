// `gpufrac status` for people: one row per GPU and MIG instance (GPU, GI, CI, NAME, UUID, USED,
// RESERVED, FREE, TOTAL, COMPUTE, SHARES), each followed by a bar of its memory, then one row per
// share (with COMPUTE booked and ACHIEVED (10 s), "-" while unknown). The COMPUTE columns appear
// once a booking holds a compute share.
// The bar gives every share on the device a run of cells in proportion to its reserved bytes,
// labelled with its container's letter (SHARE column; one letter per container across the node, so
// a letter names the same container on every GPU): upper case where its processes use the memory
// now, lower case where it is reserved but unused; '.' is free memory. Colour (ANSI) only when
// asked for: on a terminal without NO_COLOR (colour_wanted).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "cli/status_model.hpp"

namespace gpufrac::cli {

struct StatusStyle {
  bool colour = false;
  bool no_trunc = false;  // full container ids and UUIDs (else short_id)
  std::size_t bar_width = 60;
};

inline constexpr std::size_t kShortIdLength = 12;  // as docker ps and kubectl cut ids

std::string render_status(const StatusReport& report, const StatusStyle& style = {});
// "[AAAaaaBBbb......]" for one device alone; its shares are labelled share_label(0), share_label(1), ...
// (render_status labels each share with its container's letter across the node instead).
std::string memory_bar(const DeviceStatus& device, const StatusStyle& style);
// "A".."Z", then "#" (the bar's lower case of "#" is "=").
std::string share_label(std::size_t index);
// An id cut to kShortIdLength characters unless no_trunc: ids runtimes generate (lower-case hex, as
// docker ps and kubectl cut them) and GPU-/MIG- UUIDs. A name someone chose is shown whole: cut,
// "demo-sleeper-1" and "demo-sleeper-2" would read the same.
std::string short_id(std::string_view id, bool no_trunc);
// True when fd is a terminal, NO_COLOR is unset or empty (no-color.org) and TERM is not "dumb".
bool colour_wanted(int fd);

}  // namespace gpufrac::cli
