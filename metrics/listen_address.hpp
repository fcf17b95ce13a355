// `gpufrac metrics --listen`: HOST:PORT (127.0.0.1:9400, localhost:9400), [IPv6]:PORT ([::1]:9400)
// or :PORT (every IPv4 address, as node_exporter's ":9100"). Port 0 takes any free port (the
// server prints the address it got).
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::metrics {

inline constexpr const char* kDefaultListen = "127.0.0.1:9400";

struct ListenAddress {
  std::string host;         // without brackets
  int port = 0;             // 0: any free port
  std::string url() const;  // http://HOST:PORT/metrics, brackets around IPv6
};

Result<ListenAddress> parse_listen(std::string_view text);

}  // namespace gpufrac::metrics
