#include "metrics/listen_address.hpp"

#include <charconv>

#include "core/text.hpp"

namespace gpufrac::metrics {

std::string ListenAddress::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return text::cat("http://", v6 ? "[" + host + "]" : host, ":", port, "/metrics");
}

Result<ListenAddress> parse_listen(std::string_view text) {
  auto bad = [&] {
    return user_error("--listen: " + text::quote(text) +
                      " is not an address; use HOST:PORT, [IPV6]:PORT or :PORT, e.g. " + kDefaultListen);
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad();
  std::string_view host = text.substr(0, colon), port = text.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']') || host.size() < 3) return bad();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad();  // an IPv6 address needs its brackets
  }
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '%')) return bad();
  ListenAddress a{host.empty() ? "0.0.0.0" : std::string(host), 0};
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), a.port);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || a.port < 0 || a.port > 65535)
    return user_error("--listen: " + text::quote(text) + ": the port must be 0 (any free port) to 65535");
  return a;
}

}  // namespace gpufrac::metrics
