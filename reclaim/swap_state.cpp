#include "reclaim/swap_state.hpp"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/plan/plan.hpp"
#include "core/quantity.hpp"

namespace gpufrac::reclaim {

using nlohmann::json;

namespace {

SwapPhase phase_of(const std::string& s) {
  if (s == "out") return SwapPhase::out;
  if (s == "in") return SwapPhase::in;
  if (s == "swapped") return SwapPhase::swapped;
  throw std::invalid_argument("phase \"" + s.substr(0, 16) + "\" is none of out, swapped, in");
}

}  // namespace

const char* to_string(SwapPhase p) {
  switch (p) {
    case SwapPhase::out:
      return "out";
    case SwapPhase::swapped:
      return "swapped";
    case SwapPhase::in:
      return "in";
  }
  return "out";
}

std::uint64_t SwapState::bytes() const {
  std::uint64_t sum = 0;
  for (const auto& p : processes) sum = saturating_add(sum, p.bytes);
  return sum;
}

std::string swap_state_path(const Config& cfg, const std::string& key) {
  return container_files(cfg, key).dir + "/swap";
}

Result<std::optional<SwapState>> load_swap_state(const Config& cfg, const std::string& key) {
  const std::string path = swap_state_path(cfg, key);
  if (!fs::exists(path)) return std::optional<SwapState>();
  auto text = fs::read_file(path, 1u << 20);
  if (!text) return std::unexpected(text.error());
  try {
    const json doc = json::parse(*text);
    SwapState s{doc.at("gpu").get<std::string>(),    doc.at("id").get<std::string>(),
                doc.at("owner").get<std::string>(),  phase_of(doc.at("phase").get<std::string>()),
                doc.at("since").get<std::int64_t>(), {}};
    for (const auto& p : doc.at("processes"))
      s.processes.push_back(
          {p.at("pid").get<std::int64_t>(), p.at("start").get<std::uint64_t>(), p.at("bytes").get<std::uint64_t>()});
    return std::optional<SwapState>(std::move(s));
  } catch (const std::exception& e) {
    return internal_error(path + ": not a swap state (" + e.what() + "); the reclaimer writes it, nothing else should");
  }
}

Result<> save_swap_state(const Config& cfg, const std::string& key, const SwapState& s) {
  json procs = json::array();
  for (const auto& p : s.processes) procs.push_back({{"pid", p.pid}, {"start", p.start}, {"bytes", p.bytes}});
  const json doc{{"version", 1},      {"gpu", s.gpu_uuid},           {"id", s.id},
                 {"owner", s.owner},  {"phase", to_string(s.phase)}, {"since", s.since},
                 {"processes", procs}};
  return fs::write_file_atomic(swap_state_path(cfg, key), doc.dump() + "\n", 0644);
}

void remove_swap_state(const Config& cfg, const std::string& key) {
  ::unlink(swap_state_path(cfg, key).c_str());
}

}  // namespace gpufrac::reclaim
