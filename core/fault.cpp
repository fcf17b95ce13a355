#include "core/fault.hpp"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdlib>

#include "core/text.hpp"

namespace gpufrac::fault {

void point(std::string_view name) {
  const char* env = std::getenv(kEnv);
  if (env == nullptr) return;
  std::string_view wanted(env);
  std::uint64_t nth = 1;
  if (auto at = wanted.find('@'); at != std::string_view::npos) {
    auto n = text::parse_u64(wanted.substr(at + 1));
    if (!n || *n == 0) return;  // not a count: no point matches
    nth = *n;
    wanted = wanted.substr(0, at);
  }
  static std::atomic<std::uint64_t> reached{0};  // times this process reached the wanted point
  if (name == wanted && ++reached == nth) std::raise(SIGKILL);
}

}  // namespace gpufrac::fault
