#include "k8s/node_ready.hpp"

#include <cerrno>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

NodeReady read_node_ready(const std::string& path, std::string_view version) {
  auto text = fs::read_file(path, kMaxReadyBytes);
  if (!text) {
    if (text.error().err == ENOENT) return {NodeReady::State::waiting, "node setup not finished"};
    return {NodeReady::State::waiting, text.error().message};
  }
  std::string_view first(*text);
  first = first.substr(0, first.find('\n'));
  while (!first.empty() && (first.back() == '\r' || first.back() == ' ')) first.remove_suffix(1);
  if (first.empty()) return {NodeReady::State::waiting, "node setup not finished: the file is empty"};
  if (first != version) return {NodeReady::State::skewed, std::string(first)};
  return {NodeReady::State::ready, {}};
}

std::string node_ready_line(const std::string& path, const NodeReady& r, std::string_view version) {
  if (r.state == NodeReady::State::skewed)
    return text::cat(path, " names version ", text::quote(r.detail), ", this plugin is ", version,
                     ": waiting for node setup of ", version, " (the node DaemonSet's image must be this one's)");
  return text::cat("waiting for ", path, " (", r.detail, ")");
}

}  // namespace gpufrac::dra
