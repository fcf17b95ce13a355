#include "k8s/kubeconfig.hpp"

#include <cerrno>
#include <filesystem>
#include <map>

#include "core/config/yaml_util.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::dra {

namespace {

using yaml::Located;

constexpr const char* kStaticIdentity =
    "use a service account (in the cluster, without --kubeconfig) or a user with a token, tokenFile or client "
    "certificate";
constexpr std::size_t kMaxFileBytes = 1u << 20;

// An entry's body (the "cluster", "user" or "context" mapping) and the file that named it first.
struct Named {
  Located body;
  std::string file;
};

struct Merged {
  std::map<std::string, Named> clusters, users, contexts;
  std::string current;
  std::vector<std::string> read;  // the files read, in order
};

bool present(const Located& n) {
  return n.node.IsDefined() && !n.node.IsNull() && !(n.node.IsScalar() && n.node.Scalar().empty());
}

std::string entry(std::string_view kind, std::string_view name, std::string_view file) {
  return text::cat(kind, " ", text::quote(name), " in ", file);
}

// "--kubeconfig FILE" or "KUBECONFIG a:b", for messages about the whole configuration.
std::string origin(const KubeconfigSource& s) {
  return s.from_env ? "KUBECONFIG " + text::join(s.files, ":") : "--kubeconfig " + text::join(s.files, ":");
}

// A path as kubectl resolves it: relative to the directory of the file that names it.
std::string resolve(const std::string& file, const std::string& path) {
  namespace stdfs = std::filesystem;
  if (stdfs::path(path).is_absolute()) return path;
  std::error_code ec;
  const stdfs::path full = stdfs::absolute(stdfs::path(file).parent_path() / path, ec);
  return ec ? path : full.lexically_normal().string();
}

// One list of one file; the first definition of a name wins (kubectl's rule).
Result<> merge_list(const Located& root, const char* list, const char* body_key, std::map<std::string, Named>& into) {
  const Located items = root.child(list);
  if (!present(items)) return {};
  if (auto r = yaml::require_sequence(items); !r) return r;
  for (std::size_t i = 0; i < items.node.size(); ++i) {
    const Located item = items.item(i);
    if (auto r = yaml::require_map(item); !r) return r;
    const Located name_key = item.child("name");
    if (!present(name_key)) return item.fail("has no name");
    auto name = yaml::as_string(name_key);
    if (!name) return std::unexpected(name.error());
    const Located given = item.child(body_key);  // "- name: x" alone: an entry with nothing set
    const Located body = present(given) ? given : Located{YAML::Node(YAML::NodeType::Map), root.file, given.key};
    if (auto r = yaml::require_map(body); !r) return r;
    into.try_emplace(*name, Named{body, root.file});
  }
  return {};
}

Result<> merge_file(const std::string& path, bool skip_missing, Merged& m) {
  auto root = yaml::load_file(path);
  if (!root && skip_missing && root.error().err == ENOENT) return {};
  if (!root) return std::unexpected(root.error());
  if (auto r = yaml::require_map(*root); !r) return r;
  if (auto r = merge_list(*root, "clusters", "cluster", m.clusters); !r) return r;
  if (auto r = merge_list(*root, "users", "user", m.users); !r) return r;
  if (auto r = merge_list(*root, "contexts", "context", m.contexts); !r) return r;
  if (const Located current = root->child("current-context"); present(current) && m.current.empty()) {
    auto name = yaml::as_string(current);
    if (!name) return std::unexpected(name.error());
    m.current = *name;
  }
  m.read.push_back(path);
  return {};
}

// A PEM given as a file (path resolved) or as -data (base64); "" when neither is set.
Result<std::string> pem_of(const Named& n, const std::string& where, const std::string& key) {
  if (const Located data = n.body.child(key + "-data"); present(data)) {
    auto text = yaml::as_string(data);
    if (!text) return std::unexpected(text.error());
    auto pem = decode_base64(*text);
    if (!pem)
      return user_error(text::cat(where, ": ", key, "-data is not base64 (", pem.error().message,
                                  "); give the PEM file base64-encoded, as kubeadm writes it"));
    return pem;
  }
  const Located file = n.body.child(key);
  if (!present(file)) return std::string();
  auto path = yaml::as_string(file);
  if (!path) return std::unexpected(path.error());
  auto pem = fs::read_file(resolve(n.file, *path), kMaxFileBytes);
  if (!pem) return user_error(text::cat(where, ": ", key, ": ", pem.error().message));
  return pem;
}

Result<> read_cluster(const Named& c, const std::string& name, ApiConfig& out) {
  const std::string where = entry("cluster", name, c.file);
  if (present(c.body.child("proxy-url")))
    return user_error(where + ": proxy-url is not supported; gpufrac-dra connects to the server directly");
  if (present(c.body.child("tls-server-name")))
    return user_error(where + ": tls-server-name is not supported; use a server address the certificate names");
  if (auto r = yaml::check_keys(c.body, {"server", "certificate-authority", "certificate-authority-data",
                                         "insecure-skip-tls-verify", "disable-compression", "extensions"});
      !r)
    return r;
  const Located server_key = c.body.child("server");
  if (!present(server_key)) return user_error(where + ": no server; set server: https://HOST:PORT");
  auto server = yaml::as_string(server_key);
  if (!server) return std::unexpected(server.error());
  if (auto url = parse_server_url(*server); !url) return std::unexpected(url.error().wrap(where));
  out.server = *server;
  if (const Located insecure = c.body.child("insecure-skip-tls-verify"); present(insecure)) {
    auto on = yaml::as_bool(insecure);
    if (!on) return std::unexpected(on.error());
    out.insecure = *on;
  }
  auto ca = pem_of(c, where, "certificate-authority");
  if (!ca) return std::unexpected(ca.error());
  if (out.insecure && !ca->empty())
    return user_error(where + ": insecure-skip-tls-verify together with a certificate authority; keep one");
  out.ca_pem = std::move(*ca);
  out.cluster_label = where;
  out.ca_label = out.ca_pem.empty() ? text::cat("the system's CAs (", where, " names no certificate-authority)")
                                    : "the CA of " + where;
  return {};
}

// The scalar at map[key], "" when there is none.
std::string scalar_in(const Located& map, const char* key) {
  if (!map.node.IsMap()) return "";
  const Located value = map.child(key);
  return value.node.IsScalar() ? value.node.Scalar() : "";
}

// Credentials gpufrac-dra cannot use: one line naming what the user does instead.
Result<> refuse_dynamic_user(const Named& u, const std::string& where) {
  if (const Located exec = u.body.child("exec"); present(exec))
    return user_error(text::cat(where, ": authenticates with an exec plugin (", text::quote(scalar_in(exec, "command")),
                                "), which gpufrac-dra does not run; ", kStaticIdentity));
  if (const Located provider = u.body.child("auth-provider"); present(provider))
    return user_error(text::cat(where, ": authenticates with auth-provider ", text::quote(scalar_in(provider, "name")),
                                ", which gpufrac-dra does not support; ", kStaticIdentity));
  if (present(u.body.child("username")) || present(u.body.child("password")))
    return user_error(
        text::cat(where, ": basic authentication (username, password) is not supported; ", kStaticIdentity));
  for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"})
    if (present(u.body.child(key)))
      return user_error(text::cat(where, ": impersonation (", key, ") is not supported; ", kStaticIdentity));
  return {};
}

Result<> read_token(const Named& u, const std::string& where, ApiConfig& out) {
  if (const Located file = u.body.child("tokenFile"); present(file)) {
    auto path = yaml::as_string(file);
    if (!path) return std::unexpected(path.error());
    out.token_file = resolve(u.file, *path);
    if (auto t = fs::read_file(out.token_file, 64u << 10); !t)
      return user_error(text::cat(where, ": tokenFile: ", t.error().message));
    out.credentials_label = text::cat("the token in ", out.token_file, " of ", where);
    return {};
  }
  if (const Located token = u.body.child("token"); present(token)) {
    auto t = yaml::as_string(token);
    if (!t) return std::unexpected(t.error());
    out.token = *t;
    out.credentials_label = "the token of " + where;
  }
  return {};
}

Result<> read_user(const Named& u, const std::string& name, ApiConfig& out) {
  const std::string where = entry("user", name, u.file);
  if (auto r = refuse_dynamic_user(u, where); !r) return r;
  if (auto r = yaml::check_keys(u.body, {"token", "tokenFile", "client-certificate", "client-certificate-data",
                                         "client-key", "client-key-data", "extensions"});
      !r)
    return r;
  auto cert = pem_of(u, where, "client-certificate");
  if (!cert) return std::unexpected(cert.error());
  auto key = pem_of(u, where, "client-key");
  if (!key) return std::unexpected(key.error());
  if (cert->empty() != key->empty())
    return user_error(text::cat(
        where, ": ", cert->empty() ? "client-key without client-certificate" : "client-certificate without client-key",
        "; give both (files, or -data)"));
  out.client_cert_pem = std::move(*cert);
  out.client_key_pem = std::move(*key);
  out.credentials_label = text::cat("the anonymous user (", where, " has no token or client certificate)");
  if (!out.client_cert_pem.empty()) {
    out.client_cert_label = "the client certificate of " + where;
    out.credentials_label = out.client_cert_label;
  }
  if (auto r = read_token(u, where, out); !r) return r;
  if (!out.client_cert_pem.empty() && (!out.token.empty() || !out.token_file.empty()))
    out.credentials_label = "the client certificate and token of " + where;
  return {};
}

// The context's cluster and user, by name, as the merged files define them.
Result<ApiConfig> resolve_context(const Merged& m, const KubeconfigSource& s) {
  const std::string name = s.context.empty() ? m.current : s.context;
  if (name.empty()) return user_error(origin(s) + ": no current-context; set one, or pass --context NAME");
  auto ctx = m.contexts.find(name);
  if (ctx == m.contexts.end()) {
    std::vector<std::string> known;
    for (const auto& [n, _] : m.contexts) known.push_back(text::quote(n));
    return user_error(text::cat(origin(s), ": no context ", text::quote(name),
                                " (contexts: ", known.empty() ? "none" : text::join(known, ", "), ")"));
  }
  const std::string where = entry("context", name, ctx->second.file);
  if (auto r = yaml::check_keys(ctx->second.body, {"cluster", "user", "namespace", "extensions"}); !r)
    return std::unexpected(r.error());
  const Located cluster_key = ctx->second.body.child("cluster");
  if (!present(cluster_key)) return user_error(where + ": names no cluster; set its cluster");
  auto cluster_name = yaml::as_string(cluster_key);
  if (!cluster_name) return std::unexpected(cluster_name.error());
  auto cluster = m.clusters.find(*cluster_name);
  if (cluster == m.clusters.end())
    return user_error(text::cat(where, ": cluster ", text::quote(*cluster_name), " is defined in no file read"));
  ApiConfig out;
  if (auto r = read_cluster(cluster->second, *cluster_name, out); !r) return std::unexpected(r.error());
  const Located user_key = ctx->second.body.child("user");
  if (!present(user_key)) {
    out.credentials_label = text::cat("the anonymous user (", where, " names no user)");
    return out;
  }
  auto user_name = yaml::as_string(user_key);
  if (!user_name) return std::unexpected(user_name.error());
  auto user = m.users.find(*user_name);
  if (user == m.users.end())
    return user_error(text::cat(where, ": user ", text::quote(*user_name), " is defined in no file read"));
  if (auto r = read_user(user->second, *user_name, out); !r) return std::unexpected(r.error());
  return out;
}

}  // namespace

std::vector<std::string> kubeconfig_files(std::string_view env) {
  std::vector<std::string> out;
  for (auto& part : text::split(env, ':'))
    if (!part.empty()) out.push_back(part);
  return out;
}

Result<ApiConfig> kubeconfig_config(const KubeconfigSource& source) {
  Merged m;
  try {  // yaml-cpp's exceptions end here, as one line
    for (const auto& file : source.files)
      if (auto r = merge_file(file, source.from_env, m); !r) return std::unexpected(r.error().wrap("kubeconfig"));
    if (m.read.empty())
      return user_error(origin(source) + ": none of these files exists; name a kubeconfig, or unset KUBECONFIG " +
                        "to use the pod's service account");
    return resolve_context(m, source);
  } catch (const YAML::Exception& e) {
    return user_error(text::cat(origin(source), ": not a kubeconfig (", e.what(), ")"));
  }
}

Result<std::string> decode_base64(std::string_view text) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string digits;
  for (char c : text)
    if (c != '\n' && c != '\r') digits.push_back(c);
  if (digits.size() % 4 != 0) return user_error(text::cat(digits.size(), " characters, not a multiple of 4"));
  std::size_t pad = 0;
  while (pad < 2 && pad < digits.size() && digits[digits.size() - 1 - pad] == '=') ++pad;
  std::string out;
  std::uint32_t group = 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    const std::size_t v = i >= digits.size() - pad ? 0 : kAlphabet.find(digits[i]);
    if (v == std::string_view::npos)
      return user_error(text::cat(text::quote(digits.substr(i, 1)), " at character ", i + 1));
    group = group << 6 | static_cast<std::uint32_t>(v);
    if (i % 4 == 3) {
      out.push_back(static_cast<char>(group >> 16 & 0xff));
      out.push_back(static_cast<char>(group >> 8 & 0xff));
      out.push_back(static_cast<char>(group & 0xff));
      group = 0;
    }
  }
  out.resize(out.size() - pad);
  return out;
}

}  // namespace gpufrac::dra
