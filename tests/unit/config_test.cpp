#include <gtest/gtest.h>

#include <stdlib.h>
#include <filesystem>

#include "core/config/config.hpp"
#include "core/fs.hpp"

namespace gpufrac {
namespace {

TEST(Config, DefaultsMatchDesign) {
  Config c = default_config();
  EXPECT_EQ(c.state_dir, "/run/gpufrac");
  EXPECT_EQ(c.host_root, "/");
  EXPECT_EQ(c.allocation.policy, Policy::binpack);
  EXPECT_DOUBLE_EQ(c.allocation.overcommit, 1.0);
  EXPECT_EQ(c.allocation.compute, ComputeManagement::managed);  // a quarter GPU is a quarter of its time
  EXPECT_TRUE(c.require_host_pid);
  EXPECT_TRUE(c.aliases);
  EXPECT_EQ(c.requests.unknown, UnknownNames::refuse);  // a typo must not start a container silently
  EXPECT_EQ(c.cdi.fractions.size(), 7u);
  EXPECT_EQ(c.ledger_path(), "/run/gpufrac/ledger.json");
}

TEST(Config, ParsesEveryKey) {
  auto c = load_config_string(R"(
state-dir: /tmp/s
host-root: /tmp/root
nvml: {backend: simulated, machine: /m.yaml}
allocation: {policy: spread, overcommit: 1.5, max-shares-per-gpu: 8, mig-serves-fractions: true, pending-timeout: 60,
             compute: unmanaged}
aliases: false
requests: {unknown: warn}
require-host-pid: false
enforcement: driver
mig: {mode: dynamic, gpus: {"1": static, GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee: dynamic}, idle-timeout: 30}
shim: {path: /opt/shim.so}
hook: {path: /opt/gpufrac-hook}
runtimes: [crun]
log: {target: stderr, level: debug}
cdi: {output: /tmp/cdi/gpufrac.yaml, fractions: ["0.5", "0.25"], memory-shares: [4Gi]}
)",
                              "/etc/gpufrac/config.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->state_dir, "/tmp/s");
  EXPECT_EQ(c->nvml.backend, NvmlBackend::simulated);
  EXPECT_EQ(c->allocation.policy, Policy::spread);
  EXPECT_DOUBLE_EQ(c->allocation.overcommit, 1.5);
  EXPECT_EQ(c->allocation.max_shares_per_gpu, 8u);
  EXPECT_EQ(c->allocation.compute, ComputeManagement::unmanaged);
  EXPECT_FALSE(c->aliases);
  EXPECT_EQ(c->requests.unknown, UnknownNames::warn);
  EXPECT_EQ(c->enforcement, Enforcement::driver);
  EXPECT_EQ(c->mig.mode_for(1, "GPU-x"), MigMode::static_);
  EXPECT_EQ(c->mig.mode_for(0, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"), MigMode::dynamic);
  EXPECT_EQ(c->mig.mode_for(3, "GPU-y"), MigMode::dynamic);
  EXPECT_EQ(c->shim_path, "/opt/shim.so");
  EXPECT_EQ(c->runtimes, std::vector<std::string>{"crun"});
  EXPECT_EQ(c->log.target, LogTarget::stderr_);
  EXPECT_EQ(c->cdi.fractions, (std::vector<Ppm>{500000, 250000}));
  EXPECT_EQ(c->cdi.memory_shares, std::vector<std::uint64_t>{4ull << 30});
}

TEST(Config, RelativePathsFollowTheFile) {
  auto c = load_config_string("nvml: {machine: machines/x.yaml}\nstate-dir: state\n", "/srv/gpufrac/config.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->nvml.machine, "/srv/gpufrac/machines/x.yaml");
  EXPECT_EQ(c->state_dir, "/srv/gpufrac/state");
}

struct BadConfig {
  const char* yaml;
  const char* expected;  // substring of the one-line error
};

void PrintTo(const BadConfig& c, std::ostream* os) {
  *os << c.yaml;
}

class MalformedConfig : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MalformedConfig, OneLineWithFileLineAndKey) {
  auto c = load_config_string(GetParam().yaml, "cfg.yaml");
  ASSERT_FALSE(c);
  const std::string& m = c.error().message;
  EXPECT_NE(m.find(GetParam().expected), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_TRUE(m.starts_with("cfg.yaml:")) << m;
  EXPECT_EQ(c.error().kind, ErrorKind::user);
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedConfig,
    ::testing::Values(
        BadConfig{"stat-dir: /x\n", "cfg.yaml:1: stat-dir: unknown key"},
        BadConfig{"nvml:\n  backend: cuda\n",
                  "cfg.yaml:2: nvml.backend: \"cuda\" is not accepted (accepted: auto, nvml, simulated)"},
        BadConfig{"nvml:\n  backend: simulated\n", "nvml: backend simulated needs machine"},
        BadConfig{"nvml:\n  machin: x\n",
                  "cfg.yaml:2: nvml.machin: unknown key (accepted under nvml: backend, machine, library)"},
        BadConfig{"allocation:\n  overcommit: lots\n", "cfg.yaml:2: allocation.overcommit: must be a decimal number"},
        BadConfig{"allocation:\n  overcommit: 0.5\n", "allocation.overcommit: must be between 1.0 and 16.0"},
        BadConfig{"allocation: {policy: pack}\n",
                  "allocation.policy: \"pack\" is not accepted (accepted: binpack, spread)"},
        BadConfig{"allocation: {max-shares-per-gpu: -1}\n",
                  "allocation.max-shares-per-gpu: must be a non-negative integer"},
        BadConfig{"allocation:\n  compute: fair\n",
                  "cfg.yaml:2: allocation.compute: \"fair\" is not accepted (accepted: managed, unmanaged)"},
        BadConfig{"allocation:\n  compute: [managed]\n",
                  "cfg.yaml:2: allocation.compute: must be a string (accepted: managed, unmanaged)"},
        BadConfig{"require-host-pid: yes please\n", "cfg.yaml:1: require-host-pid: must be true or false"},
        BadConfig{"enforcement: strict\n",
                  "cfg.yaml:1: enforcement: \"strict\" is not accepted (accepted: auto, driver, shim)"},
        BadConfig{"mig: {gpus: {gpu0: dynamic}}\n", "mig.gpus.gpu0: GPU key must be an index"},
        BadConfig{"mig: {mode: lazy}\n", "mig.mode: \"lazy\" is not accepted (accepted: static, dynamic)"},
        BadConfig{"cdi: {fractions: [\"0.3x\"]}\n", "cdi.fractions[0]: \"0.3x\" is not a fraction"},
        BadConfig{"cdi: {memory-shares: [4GB]}\n", "cdi.memory-shares[0]: \"4GB\" is not a memory quantity"},
        BadConfig{"runtimes: []\n", "runtimes: must name at least one runtime"},
        BadConfig{"log: {target: syslog}\n", "log.target: \"syslog\" is not accepted"},
        BadConfig{"shim: /x\n", "shim: must be a mapping"}, BadConfig{"nvml: [1, 2\n", "cfg.yaml:2:1: invalid YAML"},
        BadConfig{"state-dir: \"\"\n", "state-dir: must not be empty"}, BadConfig{"- a\n- b\n", "must be a mapping"}));

TEST(Config, SelectionOrder) {
  char tmpl[] = "/tmp/gpufrac-cfg-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ASSERT_TRUE(fs::write_file_atomic(dir + "/a.yaml", "state-dir: /from-env\n"));
  ASSERT_TRUE(fs::write_file_atomic(dir + "/b.yaml", "state-dir: /from-flag\n"));
  ::setenv(kConfigEnv, (dir + "/a.yaml").c_str(), 1);
  EXPECT_EQ(select_config("")->state_dir, "/from-env");
  EXPECT_EQ(select_config(dir + "/b.yaml")->state_dir, "/from-flag");
  auto missing = select_config(dir + "/none.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("none.yaml"), std::string::npos);
  ::unsetenv(kConfigEnv);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpufrac

namespace gpufrac {
namespace {

TEST(Config, ShippedDefaultFileParsesToDefaults) {
  auto c = load_config_file(std::string(GPUFRAC_SOURCE_DIR) + "/etc/config.yaml");
  ASSERT_TRUE(c) << c.error().message;
  Config d = default_config();
  EXPECT_EQ(c->state_dir, d.state_dir);
  EXPECT_EQ(c->allocation.max_shares_per_gpu, d.allocation.max_shares_per_gpu);
  EXPECT_EQ(c->cdi.fractions, d.cdi.fractions);
  EXPECT_EQ(c->runtimes, d.runtimes);
  EXPECT_EQ(c->mig.idle_timeout_s, d.mig.idle_timeout_s);
  EXPECT_EQ(c->enforcement, Enforcement::auto_detect);
  EXPECT_EQ(d.enforcement, Enforcement::auto_detect);
  EXPECT_EQ(c->requests.unknown, d.requests.unknown);
}

TEST(Config, RequestsUnknownTakesRefuseOrWarn) {
  auto bad = load_config_string("requests: {unknown: ignore}\n", "/c.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "/c.yaml:1: requests.unknown: \"ignore\" is not accepted (accepted: refuse, warn)");
  auto key = load_config_string("requests: {unkown: warn}\n", "/c.yaml");
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().message, "/c.yaml:1: requests.unkown: unknown key (accepted under requests: unknown)");
}

}  // namespace
}  // namespace gpufrac
