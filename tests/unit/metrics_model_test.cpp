// gpufrac metrics as text: the Prometheus format details (escaping, values, histograms), the
// --listen grammar, and the whole exposition for a fixed node (golden file).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli/metrics_model.hpp"
#include "core/fs.hpp"
#include "metrics/exposition.hpp"
#include "metrics/listen_address.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

using metrics::Family;
using metrics::Type;

TEST(Exposition, EscapesAndFormats) {
  Family f("x_bytes", Type::gauge, "Help with \\ and\nnewline");
  f.add({{"a", "q\"uote\\back\nnl"}}, 18446744073709551615ULL).add_double({}, 0.25);
  EXPECT_EQ(f.render(),
            "# HELP x_bytes Help with \\\\ and\\nnewline\n"
            "# TYPE x_bytes gauge\n"
            "x_bytes{a=\"q\\\"uote\\\\back\\nnl\"} 18446744073709551615\n"
            "x_bytes 0.25\n");
  EXPECT_EQ(metrics::format_value(0.0025), "0.0025");
  EXPECT_EQ(metrics::format_value(1e-9), "1e-09");
  EXPECT_EQ(metrics::format_value(5), "5");
}

TEST(Exposition, HistogramIsCumulative) {
  Family f("t_seconds", Type::histogram, "T");
  f.add_histogram({{"stage", "s"}}, {0.1, 1}, {2, 0, 3}, 4.5);
  EXPECT_EQ(f.render(),
            "# HELP t_seconds T\n# TYPE t_seconds histogram\n"
            "t_seconds_bucket{stage=\"s\",le=\"0.1\"} 2\n"
            "t_seconds_bucket{stage=\"s\",le=\"1\"} 2\n"
            "t_seconds_bucket{stage=\"s\",le=\"+Inf\"} 5\n"
            "t_seconds_sum{stage=\"s\"} 4.5\n"
            "t_seconds_count{stage=\"s\"} 5\n");
}

TEST(ListenAddress, Forms) {
  auto a = metrics::parse_listen("127.0.0.1:9400");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  EXPECT_EQ(metrics::parse_listen(":9400")->host, "0.0.0.0");
  EXPECT_EQ(metrics::parse_listen("[::1]:1")->url(), "http://[::1]:1/metrics");
  EXPECT_EQ(metrics::parse_listen("localhost:65535")->url(), "http://localhost:65535/metrics");
  for (const char* bad : {"9400", "::1:9400", "[::1]", "a b:1", "[]:1"})
    EXPECT_EQ(metrics::parse_listen(bad).error().message,
              std::string("--listen: \"") + bad +
                  "\" is not an address; use HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:9400")
        << bad;
  EXPECT_EQ(metrics::parse_listen("127.0.0.1:0")->port, 0);
  for (const char* bad : {"h:-1", "h:65536", "h:", "h:12x"})
    EXPECT_EQ(metrics::parse_listen(bad).error().message,
              std::string("--listen: \"") + bad + "\": the port must be 0 (any free port) to 65535")
        << bad;
}

LedgerEntry booking(const std::string& id, const Gpu& gpu, std::uint64_t bytes, std::int64_t pid) {
  LedgerEntry e;
  e.container_id = id;
  e.device_uuid = gpu.uuid;
  e.gpu_index = gpu.index;
  e.gpu_uuid = gpu.uuid;
  e.bytes = bytes;
  e.request = "fraction=0.25";
  e.pid = pid;
  e.pid_start = pid ? 1 : 0;
  return e;
}

// Two GPUs with two shares (one pending, one using 3 GiB and 20 % of the GPU's time; 25 % and 30 %
// of it booked; its compute arbiter tampered with), a MIG machine's instances by state, and counters with one refusal
// and two hook runs: the whole text, byte for byte.
TEST(NodeMetrics, Golden) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-40gb-x2.yaml");
  ASSERT_TRUE(m);
  cli::NodeView node;
  node.inventory = m->inventory;
  node.ledger.entries = {booking("web", node.inventory.gpus[0], 10626269184, 42),
                         booking("batch", node.inventory.gpus[0], 4 * kGiB, 0)};
  node.ledger.entries[0].compute_ppm = 250'000;
  node.ledger.entries[0].driver_limit = DriverLimit{"/sys/fs/cgroup/web", 10626269184, 10626269184};
  node.ledger.entries[1].compute_ppm = 300'000;
  node.ledger.entries[1].compute_mode = ComputeMode::strict;
  node.ledger.entries[1].request = "memory=4Gi compute=30 compute-mode=strict";
  node.ledger_file_bytes = 1234;
  node.report = cli::build_status(
      node.inventory, node.ledger, AllocationConfig{}, 100, [](const LedgerEntry&) { return std::string("running"); },
      [](const LedgerEntry& e) { return e.pending() ? std::nullopt : std::optional<std::uint64_t>(3 * kGiB); },
      [](const LedgerEntry& e) { return e.pending() ? std::nullopt : std::optional<std::uint32_t>(200'000); });
  node.report.devices[0].compute_tampered = {"the lease names slot 9, which was never set up"};
  metrics::CounterSnapshot c;
  c.refusals[0][static_cast<std::size_t>(metrics::Refusal::capacity)] = 1;
  c.latency[static_cast<std::size_t>(metrics::Timer::hook_create_runtime)].buckets[2] = 2;
  c.latency[static_cast<std::size_t>(metrics::Timer::hook_create_runtime)].sum_ns = 7500000;
  const std::string text = metrics::render(cli::node_metrics(node, c, "0.1.0"));
  const std::string path = std::string(GPUFRAC_SOURCE_DIR) + "/tests/fixtures/metrics/two-gpus.prom";
  if (std::getenv("GPUFRAC_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(fs::write_file_atomic(path, text));
  }
  auto golden = fs::read_file(path);
  ASSERT_TRUE(golden) << golden.error().message;
  EXPECT_EQ(text, *golden) << "differs from " << path << " (GPUFRAC_UPDATE_GOLDEN=1 rewrites it)";
}

TEST(NodeMetrics, MigInstancesByState) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-80gb-mig.yaml");
  ASSERT_TRUE(m);
  cli::NodeView node;
  node.inventory = m->inventory;
  const Gpu& g = node.inventory.gpus[0];
  LedgerEntry e = booking("m", g, 9728 * kMiB, 9);
  e.device_uuid = "MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e";
  e.mig = MigRef{9, 0, "1g.10gb"};
  node.ledger = LedgerState{{e}, {{"MIG-6ab7d7ee-fc32-0d24-eb1d-a652742cd522", g.uuid, 50}}};
  node.report = cli::build_status(node.inventory, node.ledger, AllocationConfig{}, 100,
                                  [](const LedgerEntry&) { return std::string("running"); });
  const std::string text = metrics::render(cli::node_metrics(node, {}, "0.1.0"));
  const std::string l = "{gpu_index=\"0\",gpu_uuid=\"" + g.uuid + "\",state=";
  for (auto line : {"gpufrac_mig_instances" + l + "\"in_use\"} 1\n", "gpufrac_mig_instances" + l + "\"idle\"} 1\n",
                    "gpufrac_mig_instances" + l + "\"free\"} 2\n",
                    "gpufrac_gpu_info{gpu_index=\"0\",gpu_uuid=\"" + g.uuid +
                        "\",name=\"NVIDIA A100-SXM4-80GB\",mig_mode=\"true\"} 1\n",
                    "gpufrac_gpu_memory_reserved_bytes{gpu_index=\"0\",gpu_uuid=\"" + g.uuid +
                        "\",device_uuid=\"MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e\"} 10200547328\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
  // The GPU in MIG mode has no memory series of its own: its memory is its instances'.
  EXPECT_EQ(text.find("device_uuid=\"" + g.uuid + "\""), std::string::npos);
}

}  // namespace
}  // namespace gpufrac
