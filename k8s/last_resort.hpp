// The last resort of each thread of gpufrac-dra (the resync loop, the gRPC handlers): an exception
// that got this far is a bug, since every answer of the API server and every file is read into
// error values (k8s/api_response.hpp). It is logged in one line and the thread's loop goes on: the
// kubelet's sockets keep answering and the next resync tries again.
#pragma once

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "core/log.hpp"

namespace gpufrac::dra {

inline void report_escaped(std::string_view where, std::string_view what) noexcept {
  try {
    log::error(std::string(where) + ": unexpected exception: " + std::string(what) + "; carrying on");
  } catch (...) {
    std::fprintf(stderr, "gpufrac-dra: %.*s: unexpected exception; carrying on\n", static_cast<int>(where.size()),
                 where.data());
  }
}

// Runs f(); false when an exception escaped it (logged).
template <class F>
bool last_resort(std::string_view where, F&& f) noexcept {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    report_escaped(where, e.what());
  } catch (...) {
    report_escaped(where, "not a std::exception");
  }
  return false;
}

}  // namespace gpufrac::dra
