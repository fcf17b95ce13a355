// The node's ready file: `gpufrac node setup` writes it on the host once the hook, the shim, the CLI
// and the runtime's configuration are in place, its first line the version it installed.
// gpufrac-dra (--node-ready) registers with the kubelet only once that version is its own: the
// claims' CDI specs it writes point at those host files. Reading is pure but for one bounded read.
#pragma once

#include <string>
#include <string_view>

namespace gpufrac::dra {

// What the ready file says now.
struct NodeReady {
  enum class State { waiting, skewed, ready } state = State::waiting;
  std::string detail;  // waiting: why (absent, unreadable); skewed: the version it names

  bool operator==(const NodeReady&) const = default;
};

// Reads the first line of `path` (at most kMaxReadyBytes of the file) and compares it with `version`.
NodeReady read_node_ready(const std::string& path, std::string_view version);

// The one line gpufrac-dra logs on entering state `r` (not for ready).
std::string node_ready_line(const std::string& path, const NodeReady& r, std::string_view version);

inline constexpr std::size_t kMaxReadyBytes = 4096;

}  // namespace gpufrac::dra
