#include "core/fault.hpp"

#include <csignal>
#include <cstdlib>

namespace gpufrac::fault {

void point(std::string_view name) {
  const char* wanted = std::getenv(kEnv);
  if (wanted != nullptr && name == wanted) std::raise(SIGKILL);
}

}  // namespace gpufrac::fault
