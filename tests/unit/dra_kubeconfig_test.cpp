// The kubeconfig reader of gpufrac-dra (k8s/kubeconfig.hpp): every form kubectl accepts for a
// static identity, relative paths, contexts, $KUBECONFIG lists, and each refusal's exact line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "core/fs.hpp"
#include "k8s/kubeconfig.hpp"
#include "scratch_dir.hpp"

namespace gpufrac::dra {
namespace {

constexpr const char* kCaPem = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr const char* kCaData = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K";
constexpr const char* kNoServiceAccount =
    "use a service account (in the cluster, without --kubeconfig) or a user with a token, tokenFile or client "
    "certificate";

class Kubeconfig : public ::testing::Test {
 protected:
  std::string dir = test::scratch_dir("gpufrac-kubeconfig");
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    EXPECT_TRUE(fs::write_file_atomic(path, text));
    return path;
  }
  // A kubeconfig of one cluster, user and context named `name`, with the entries' extra lines.
  std::string config(const std::string& file, const std::string& cluster, const std::string& user,
                     const std::string& name = "kind", const std::string& current = "kind") {
    return write(file, "apiVersion: v1\nkind: Config\n" +
                           (current.empty() ? std::string() : "current-context: " + current + "\n") +
                           "clusters:\n- name: " + name + "\n  cluster:\n    server: https://10.0.0.1:6443\n" +
                           cluster + "users:\n- name: " + name + "\n  user:\n" + user + "contexts:\n- name: " + name +
                           "\n  context:\n    cluster: " + name + "\n    user: " + name + "\n");
  }
  Result<ApiConfig> read(const std::string& path, const std::string& context = "") {
    return kubeconfig_config({{path}, false, context});
  }
  std::string error(const Result<ApiConfig>& r) { return r ? "ok" : r.error().message; }
};

TEST_F(Kubeconfig, CaDataAndTokenAsKubeadmKindAndK3sWriteThem) {
  const std::string path =
      config("config", std::string("    certificate-authority-data: ") + kCaData + "\n", "    token: abc.def\n");
  auto c = read(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, kCaPem);
  EXPECT_EQ(c->token, "abc.def");
  EXPECT_FALSE(c->insecure);
  EXPECT_EQ(c->ca_label, "the CA of cluster \"kind\" in " + path);
  EXPECT_EQ(c->credentials_label, "the token of user \"kind\" in " + path);
  EXPECT_EQ(c->client_cert_label, "");
}

TEST_F(Kubeconfig, ClientCertificateDataAsInKubeadmsAdminConf) {
  const std::string path =
      config("admin.conf", std::string("    certificate-authority-data: ") + kCaData + "\n",
             std::string("    client-certificate-data: ") + kCaData + "\n    client-key-data: S0VZCg==\n",
             "kubernetes-admin", "kubernetes-admin");
  auto c = read(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->client_cert_pem, kCaPem);
  EXPECT_EQ(c->client_key_pem, "KEY\n");
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->client_cert_label, "the client certificate of user \"kubernetes-admin\" in " + path);
  EXPECT_EQ(c->credentials_label, c->client_cert_label);
}

TEST_F(Kubeconfig, RelativePathsAreResolvedAgainstTheKubeconfigsDirectory) {
  write("kube/pki/ca.crt", kCaPem);
  write("kube/pki/client.crt", "CERT");
  write("kube/pki/client.key", "KEY");
  write("kube/token", "t0k3n\n");
  config("kube/config", "    certificate-authority: pki/ca.crt\n",
         "    client-certificate: pki/client.crt\n    client-key: ./pki/../pki/client.key\n    tokenFile: token\n");
  const std::string cwd = std::filesystem::current_path();
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  auto c = read("kube/config");  // relative to the working directory, as kubectl takes it
  ASSERT_EQ(::chdir(cwd.c_str()), 0);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->ca_pem, kCaPem);
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->token_file, dir + "/kube/token");
  EXPECT_EQ(c->credentials_label, "the client certificate and token of user \"kind\" in kube/config");
  auto absolute = read(dir + "/kube/config");
  ASSERT_TRUE(absolute);
  EXPECT_EQ(absolute->token_file, dir + "/kube/token");
}

TEST_F(Kubeconfig, ContextsByCurrentContextOrByName) {
  const std::string path =
      write("config",
            "current-context: a\n"
            "clusters:\n- {name: one, cluster: {server: 'https://one:6443'}}\n"
            "- {name: two, cluster: {server: 'https://two:6443', insecure-skip-tls-verify: true}}\n"
            "users:\n- {name: u, user: {token: t}}\n"
            "contexts:\n- {name: a, context: {cluster: one, user: u}}\n- {name: b, context: {cluster: two}}\n");
  EXPECT_EQ(read(path)->server, "https://one:6443");
  auto b = read(path, "b");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->server, "https://two:6443");
  EXPECT_TRUE(b->insecure);
  EXPECT_EQ(b->cluster_label, "cluster \"two\" in " + path);
  EXPECT_EQ(b->credentials_label, "the anonymous user (context \"b\" in " + path + " names no user)");
  EXPECT_EQ(error(read(path, "c")), "--kubeconfig " + path + ": no context \"c\" (contexts: \"a\", \"b\")");
  const std::string none = config("none", "", "    token: t\n", "x", "");
  EXPECT_EQ(error(read(none)), "--kubeconfig " + none + ": no current-context; set one, or pass --context NAME");
  EXPECT_TRUE(read(none, "x"));
  const std::string dangling =
      write("dangling", "current-context: a\ncontexts:\n- {name: a, context: {cluster: gone}}\n");
  EXPECT_EQ(error(read(dangling)), "context \"a\" in " + dangling + ": cluster \"gone\" is defined in no file read");
  const std::string no_user = write("nouser",
                                    "current-context: a\nclusters:\n- {name: c, cluster: {server: 'https://c'}}\n"
                                    "contexts:\n- {name: a, context: {cluster: c, user: who}}\n");
  EXPECT_EQ(error(read(no_user)), "context \"a\" in " + no_user + ": user \"who\" is defined in no file read");
}

TEST_F(Kubeconfig, KubeconfigListsMergeAsKubectlDoes) {
  EXPECT_EQ(kubeconfig_files("/a::/b:"), (std::vector<std::string>{"/a", "/b"}));
  const std::string first =
      write("first", "current-context: mine\nclusters:\n- {name: c, cluster: {server: 'https://first'}}\n");
  const std::string second =
      write("second",
            "current-context: theirs\nclusters:\n- {name: c, cluster: {server: 'https://second'}}\n"
            "users:\n- {name: u, user: {token: from-second}}\n"
            "contexts:\n- {name: mine, context: {cluster: c, user: u}}\n- {name: theirs, context: {cluster: c}}\n");
  const std::string absent = dir + "/absent";
  auto c = kubeconfig_config({kubeconfig_files(absent + ":" + first + ":" + second), true, ""});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://first") << "the first file to name a cluster wins";
  EXPECT_EQ(c->token, "from-second") << "the first current-context (mine), its user from the second file";
  EXPECT_EQ(c->credentials_label, "the token of user \"u\" in " + second);
  EXPECT_EQ(error(kubeconfig_config({{absent, absent + "2"}, true, ""})),
            "KUBECONFIG " + absent + ":" + absent +
                "2: none of these files exists; name a kubeconfig, or unset KUBECONFIG to use the pod's service "
                "account");
  EXPECT_EQ(error(read(absent)), "kubeconfig: cannot open " + absent + ": No such file or directory");
  const std::string bad = write("bad", "clusters: [\n");
  EXPECT_EQ(error(read(bad)).substr(0, 12 + bad.size()), "kubeconfig: " + bad);
}

TEST_F(Kubeconfig, UsersThatRunProgramsAreRefusedInOneLine) {
  const std::string at = "user \"kind\" in " + dir + "/config: ";
  EXPECT_EQ(error(read(config("config", "",
                              "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: "
                              "gke-gcloud-auth-plugin\n"))),
            at + "authenticates with an exec plugin (\"gke-gcloud-auth-plugin\"), which gpufrac-dra does not run; " +
                kNoServiceAccount);
  EXPECT_EQ(error(read(config("config", "", "    auth-provider:\n      name: oidc\n"))),
            at + "authenticates with auth-provider \"oidc\", which gpufrac-dra does not support; " + kNoServiceAccount);
  EXPECT_EQ(error(read(config("config", "", "    username: admin\n    password: secret\n"))),
            at + "basic authentication (username, password) is not supported; " + kNoServiceAccount);
  EXPECT_EQ(error(read(config("config", "", "    token: t\n    as: someone\n"))),
            at + "impersonation (as) is not supported; " + kNoServiceAccount);
}

TEST_F(Kubeconfig, EveryOtherRefusalNamesTheEntryAndTheAcceptedForm) {
  const std::string path = dir + "/config";
  const std::string cluster = "cluster \"kind\" in " + path + ": ";
  const std::string user = "user \"kind\" in " + path + ": ";
  EXPECT_EQ(error(read(config("config", "    certificate-authority: missing/ca.crt\n", "    token: t\n"))),
            cluster + "certificate-authority: cannot open " + dir + "/missing/ca.crt: No such file or directory");
  EXPECT_EQ(error(read(config("config", "    certificate-authority-data: not*base64==\n", "    token: t\n"))),
            cluster + "certificate-authority-data is not base64 (\"*\" at character 4); give the PEM file " +
                "base64-encoded, as kubeadm writes it");
  EXPECT_EQ(error(read(config(
                "config",
                std::string("    certificate-authority-data: ") + kCaData + "\n    insecure-skip-tls-verify: true\n",
                "    token: t\n"))),
            cluster + "insecure-skip-tls-verify together with a certificate authority; keep one");
  EXPECT_EQ(error(read(config("config", "    proxy-url: http://proxy:3128\n", "    token: t\n"))),
            cluster + "proxy-url is not supported; gpufrac-dra connects to the server directly");
  EXPECT_EQ(error(read(config("config", "    tls-server-name: api\n", "    token: t\n"))),
            cluster + "tls-server-name is not supported; use a server address the certificate names");
  EXPECT_EQ(error(read(config("config", "", "    client-certificate-data: Q0VSVAo=\n"))),
            user + "client-certificate without client-key; give both (files, or -data)");
  EXPECT_EQ(error(read(config("config", "", "    tokenFile: nowhere\n"))),
            user + "tokenFile: cannot open " + dir + "/nowhere: No such file or directory");
  EXPECT_EQ(error(read(config("config", "", "    tokn: t\n"))),
            path + ":11: users[0].user.tokn: unknown key (accepted under users[0].user: token, tokenFile, " +
                "client-certificate, client-certificate-data, client-key, client-key-data, extensions)");
  const std::string url = write("url",
                                "current-context: a\nclusters:\n- {name: c, cluster: {server: 'ftp://x'}}\n"
                                "contexts:\n- {name: a, context: {cluster: c}}\n");
  EXPECT_EQ(error(read(url)), "cluster \"c\" in " + url +
                                  ": server \"ftp://x\": not an http or https URL; use https://HOST[:PORT][/PATH] (or "
                                  "http://), as a kubeconfig's server");
  const std::string no_server =
      write("noserver",
            "current-context: a\nclusters:\n- {name: c, cluster: {}}\ncontexts:\n- {name: a, context: {cluster: c}}\n");
  EXPECT_EQ(error(read(no_server)), "cluster \"c\" in " + no_server + ": no server; set server: https://HOST:PORT");
  const std::string bare = write("bare",
                                 "current-context: a\nclusters:\n- name: c\ncontexts:\n- {name: a, context: {}}\n"
                                 "- name: b\nusers:\n- {}\n");
  EXPECT_EQ(error(read(bare)), "kubeconfig: " + bare + ":8: users[0]: has no name");
  const std::string bare_context =
      write("bare2", "current-context: a\nclusters:\n- name: c\ncontexts:\n- {name: a, context: {}}\n- name: b\n");
  EXPECT_EQ(error(read(bare_context)), "context \"a\" in " + bare_context + ": names no cluster; set its cluster");
  auto no_body = kubeconfig_config({{bare_context}, false, "b"});
  EXPECT_EQ(error(no_body), "context \"b\" in " + bare_context + ": names no cluster; set its cluster");
}

TEST(KubeconfigBase64, StrictStandardAlphabetWithPadding) {
  EXPECT_EQ(*decode_base64("S0VZCg=="), "KEY\n");
  EXPECT_EQ(*decode_base64("S0VZ\r\nCg=="), "KEY\n") << "line breaks are ignored, as Go's decoder does";
  EXPECT_EQ(*decode_base64(""), "");
  EXPECT_EQ(*decode_base64("YQ=="), "a");
  EXPECT_EQ(*decode_base64("YWI="), "ab");
  EXPECT_EQ(decode_base64("YQ").error().message, "2 characters, not a multiple of 4");
  EXPECT_EQ(decode_base64("Y=Q=").error().message, "\"=\" at character 2");
  EXPECT_EQ(decode_base64("YQ-_").error().message, "\"-\" at character 3");
}

TEST(ServerUrl, TheFormsAKubeconfigsServerTakes) {
  auto a = parse_server_url("https://10.0.0.1:6443");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->tls);
  EXPECT_EQ(a->host, "10.0.0.1");
  EXPECT_EQ(a->port, 6443);
  EXPECT_EQ(a->base_path, "");
  auto b = parse_server_url("https://rancher.example.com/k8s/clusters/c-1/");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->port, 443);
  EXPECT_EQ(b->base_path, "/k8s/clusters/c-1");
  auto c = parse_server_url("http://[fd00::1]:8080");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->tls);
  EXPECT_EQ(c->host, "fd00::1");
  EXPECT_EQ(c->port, 8080);
  const std::string form = "; use https://HOST[:PORT][/PATH] (or http://), as a kubeconfig's server";
  EXPECT_EQ(parse_server_url("10.0.0.1:6443").error().message,
            "server \"10.0.0.1:6443\": not an http or https URL" + form);
  EXPECT_EQ(parse_server_url("https://h:0").error().message,
            "server \"https://h:0\": not a port from 1 to 65535" + form);
  EXPECT_EQ(parse_server_url("https://u@h").error().message,
            "server \"https://u@h\": not a host name or address (a user@ or a stray character)" + form);
  EXPECT_EQ(parse_server_url("https://h/x?y").error().message, "server \"https://h/x?y\": a query or fragment" + form);
  EXPECT_EQ(parse_server_url("https://[::1").error().message,
            "server \"https://[::1\": an IPv6 address without its closing bracket" + form);
  EXPECT_EQ(parse_server_url("https://h:").error().message, "server \"https://h:\": an empty port" + form);
}

}  // namespace
}  // namespace gpufrac::dra
