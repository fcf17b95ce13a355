#include "fake_compute_mode.hpp"

#include <sstream>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::fake_nvml {

namespace {

std::string modes_path(const State& s) {
  return s.state_file + ".compute-mode";
}

}  // namespace

Result<std::map<std::string, unsigned int>> load_compute_modes(const State& state) {
  if (state.state_file.empty()) return state.compute_modes;
  if (!fs::exists(modes_path(state))) return std::map<std::string, unsigned int>{};
  auto text = fs::read_file(modes_path(state), 1u << 16);
  if (!text) return std::unexpected(text.error());
  std::map<std::string, unsigned int> out;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string uuid;
    unsigned int mode = 0;
    if (!(l >> uuid >> mode) || mode > 3)
      return internal_error(modes_path(state) + ": not a line \"<GPU uuid> <mode 0-3>\": " + line);
    out[uuid] = mode;
  }
  return out;
}

Result<> save_compute_modes(State& state, const std::map<std::string, unsigned int>& modes) {
  std::map<std::string, unsigned int> kept;
  for (const auto& [uuid, mode] : modes)
    if (mode != 0) kept[uuid] = mode;
  if (state.state_file.empty()) {
    state.compute_modes = std::move(kept);
    return {};
  }
  std::string text;
  for (const auto& [uuid, mode] : kept) text += text::cat(uuid, " ", mode, "\n");
  return fs::write_file_atomic(modes_path(state), text, 0644);
}

}  // namespace gpufrac::fake_nvml
