#include "k8s/api_config.hpp"

#include <cstdlib>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

constexpr const char* kServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount";
constexpr const char* kUrlForm = "https://HOST[:PORT][/PATH] (or http://), as a kubeconfig's server";

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// HOST[:PORT] or [IPv6][:PORT] into `out`; "" when it is one, else what is wrong.
std::string_view read_authority(std::string_view authority, ServerUrl& out) {
  std::string_view port;
  if (authority.starts_with("[")) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return "an IPv6 address without its closing bracket";
    out.host = std::string(authority.substr(1, close - 1));
    if (out.host.empty() || out.host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos)
      return "not an IPv6 address in brackets";
    authority.remove_prefix(close + 1);
    if (!authority.empty() && !authority.starts_with(":")) return "text after the IPv6 address";
    port = authority.empty() ? std::string_view() : authority.substr(1);
  } else {
    const std::size_t colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    port = colon == std::string_view::npos ? std::string_view() : authority.substr(colon + 1);
    if (out.host.empty()) return "no host";
    for (char c : out.host)
      if (!host_char(c)) return "not a host name or address (a user@ or a stray character)";
  }
  if (port.empty()) return authority.ends_with(":") ? "an empty port" : "";
  auto p = text::parse_u64(port);
  if (!p || *p == 0 || *p > 65535) return "not a port from 1 to 65535";
  out.port = static_cast<int>(*p);
  return "";
}

}  // namespace

Result<ServerUrl> parse_server_url(std::string_view url) {
  auto refuse = [&](std::string_view why) {
    return user_error(text::cat("server ", text::quote(url), ": ", why, "; use ", kUrlForm));
  };
  ServerUrl out;
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    out.tls = false;
    out.port = 80;
  } else {
    return refuse("not an http or https URL");
  }
  const std::size_t end = rest.find('/');
  const std::string_view path = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (path.find_first_of("?#") != std::string_view::npos) return refuse("a query or fragment");
  if (auto why = read_authority(rest.substr(0, end), out); !why.empty()) return refuse(why);
  out.base_path = std::string(path);
  while (out.base_path.ends_with("/")) out.base_path.pop_back();
  return out;
}

Result<ApiConfig> in_cluster_config() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port)
    return user_error("not in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); pass --kubeconfig FILE");
  const std::string h = std::string(host).find(':') != std::string::npos ? text::cat("[", host, "]") : host;
  const std::string ca_path = text::cat(kServiceAccount, "/ca.crt");
  auto ca = fs::read_file(ca_path, 1u << 20);
  if (!ca) return std::unexpected(ca.error().wrap("the service account's CA"));
  ApiConfig c;
  c.server = text::cat("https://", h, ":", port);
  c.ca_pem = std::move(*ca);
  c.token_file = text::cat(kServiceAccount, "/token");
  c.ca_label = "the service account's CA " + ca_path;
  c.credentials_label = "the service account token " + c.token_file;
  return c;
}

}  // namespace gpufrac::dra
