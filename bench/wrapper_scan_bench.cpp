// gpufrac-runtime's fast path on a create without a GPU request: the byte scan of config.json
// (may_name_gpufrac) against what it saves, a full JSON parse of the spec (and the annotation
// request check after it). The spec is shaped like one containerd's CRI plugin writes for a
// Kubernetes pod: 40 env entries, 20 mounts, 25 annotations, a device rule; about 6 KB. For scale,
// the other thing every call does: loading the node config (etc/config.yaml, every key set).
// After the runs a line gives the scan as a fraction of the parse.
#include <benchmark/benchmark.h>

#include "bench/ratio_main.hpp"

#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config/config.hpp"
#include "core/fs.hpp"
#include "core/request/request.hpp"
#include "core/spec/spec_scan.hpp"
#include "core/text.hpp"

namespace gpufrac::wrapper {
namespace {

std::string pod_spec() {
  nlohmann::json spec = {{"ociVersion", "1.0.2-dev"}, {"root", {{"path", "rootfs"}}}, {"hostname", "web-7d9f8"}};
  nlohmann::json env = nlohmann::json::array(), mounts = nlohmann::json::array(), ann = nlohmann::json::object();
  for (int i = 0; i < 40; ++i) env.push_back(text::cat("SERVICE_", i, "_PORT=tcp://10.96.0.", i, ":443"));
  for (int i = 0; i < 20; ++i)
    mounts.push_back({{"destination", text::cat("/var/lib/kubelet/pods/volume-", i)},
                      {"type", "bind"},
                      {"source", text::cat("/var/lib/kubelet/pods/0f7c/volumes/kubernetes.io~secret/token-", i)},
                      {"options", {"rbind", "rprivate", "ro"}}});
  for (int i = 0; i < 20; ++i) ann[text::cat("example.com/annotation-", i)] = text::cat("value-", i);
  ann["io.kubernetes.cri.container-type"] = "container";
  ann["io.kubernetes.cri.sandbox-id"] = "4b1f6c0e2b7f3a9d8c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c";
  ann["io.kubernetes.cri.sandbox-name"] = "web-7d9f8";
  ann["io.kubernetes.cri.sandbox-namespace"] = "default";
  ann["io.kubernetes.cri.image-name"] = "registry.example.com/web:1.2.3";
  spec["process"] = {{"args", {"/usr/bin/web", "--port", "8080"}}, {"env", env}, {"cwd", "/"}};
  spec["mounts"] = mounts;
  spec["annotations"] = ann;
  spec["linux"] = {{"resources", {{"devices", {{{"allow", false}, {"access", "rwm"}}}}}},
                   {"namespaces", {{{"type", "mount"}}, {{"type", "network"}, {"path", "/var/run/netns/cni-1"}}}}};
  return spec.dump();
}

const std::string& spec_text() {
  static const std::string s = pod_spec();
  return s;
}

void BM_Scan(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(may_name_gpufrac(spec_text()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * spec_text().size()));
}
BENCHMARK(BM_Scan);

void BM_ParseAndCheck(benchmark::State& state) {
  for (auto _ : state) {
    auto j = nlohmann::json::parse(spec_text(), nullptr, false);
    Annotations ann;
    for (const auto& [k, v] : j["annotations"].items())
      if (v.is_string()) ann[k] = v.get<std::string>();
    benchmark::DoNotOptimize(has_gpufrac_request(ann, true));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * spec_text().size()));
}
BENCHMARK(BM_ParseAndCheck);

void BM_LoadConfig(benchmark::State& state) {
  static const std::string yaml = fs::read_file(std::string(GPUFRAC_SOURCE_DIR) + "/etc/config.yaml").value();
  for (auto _ : state) benchmark::DoNotOptimize(load_config_string(yaml, "config.yaml"));
}
BENCHMARK(BM_LoadConfig);

}  // namespace
}  // namespace gpufrac::wrapper

int main(int argc, char** argv) {
  std::printf("spec %zu bytes\n", gpufrac::wrapper::spec_text().size());
  return gpufrac::bench::run_with_ratios(argc, argv, {{"BM_Scan", "BM_ParseAndCheck"}}, 4);
}
