// The driver's per-cgroup memory limits end to end below the front-ends: the fake
// libnvidia-ml.so.1 keeps the driver's rules (tests/fakes/nvml/api_memory_limits.cpp), and
// apply_driver_limits / clear_driver_limits (nvml/driver_limit_apply.hpp) record before they set,
// undo what they set on any failure, and clear on a cgroup the runtime removed already.
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/ledger/ledger.hpp"
#include "core/text.hpp"
#include "fake_proc.hpp"
#include "nvml/driver_limit_apply.hpp"
#include "nvml/driver_limits.hpp"
#include "nvml/nvml_api.hpp"
#include "nvml/sim_root.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac {
namespace {

const std::string kMachines = std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/";
const std::string kGpu0 = "GPU-3f6c1d2e-8a41-4b7c-9e35-0d2a6f18c4b7",
                  kGpu1 = "GPU-a2e95b07-41d3-4c8f-b6e0-5f7d93c2a168";
constexpr std::int64_t kPid = 4242;

// A node on the r615 machine: a cgroup v2 root and a proc root under a temporary directory (pid
// 4242 in cgroup /c1), the fake NVML's state in a file, the NVML backend over the fake.
class DriverLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("driver-limit");
    cgroup_ = dir_ + "/cgroup";
    ASSERT_TRUE(fs::make_dirs(cgroup_ + "/c1"));
    ASSERT_TRUE(fs::write_file_atomic(cgroup_ + "/cgroup.controllers", ""));
    testing::write_stat(dir_ + "/proc", kPid, 'S', 777);
    ASSERT_TRUE(fs::write_file_atomic(text::cat(dir_, "/proc/", kPid, "/cgroup"), "0::/c1\n"));
    use("h100-80gb-x3-r615.yaml", "auto");
  }
  void TearDown() override {
    for (const char* v : {"GPUFRAC_FAKE_NVML_MACHINE", "GPUFRAC_FAKE_NVML_STATE", "GPUFRAC_FAKE_NVML_FAIL",
                          "GPUFRAC_FAKE_NVML_CGROUP_ROOT"})
      ::unsetenv(v);
    std::filesystem::remove_all(dir_);
  }
  void use(const std::string& machine, const std::string& enforcement) {
    ::setenv("GPUFRAC_FAKE_NVML_MACHINE", (kMachines + machine).c_str(), 1);
    ::setenv("GPUFRAC_FAKE_NVML_STATE", (dir_ + "/fake.json").c_str(), 1);
    ::setenv("GPUFRAC_FAKE_NVML_CGROUP_ROOT", cgroup_.c_str(), 1);
    auto m = load_simulated_machine(kMachines + machine);
    ASSERT_TRUE(m);
    inv_ = m->inventory;
    auto cfg = load_config_string(
        text::cat("state-dir: ", dir_, "/state\nproc-root: ", dir_, "/proc\ncgroup-root: ", cgroup_,
                  "\nnvml: {backend: nvml, library: ", GPUFRAC_FAKE_NVML, "}\nenforcement: ", enforcement, "\n"),
        "test.yaml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    cfg_ = *cfg;
    ASSERT_TRUE(fs::make_dirs(cfg_.state_dir));
    ASSERT_TRUE(fs::write_file_atomic(cfg_.inventory_cache_path(), to_json(inv_).dump()));
  }
  // Books `fraction` of GPU `gpu` for c1 (device key `key`), as the hook does with the pid.
  void book(const std::string& key, const std::string& fraction, int gpu) {
    ReserveArgs a;
    a.container_id = "c1";
    a.device_key = key;
    a.request = **parse_request({{"gpufrac.io/fraction", fraction}, {"gpufrac.io/gpu", text::cat(gpu)}}, true);
    a.pid = kPid;
    a.instance = "i1";
    auto b = Ledger(LedgerOptions::from(cfg_)).reserve(a, inv_, cfg_.allocation);
    ASSERT_TRUE(b) << b.error().message;
  }
  Result<AppliedLimits> apply() { return apply_driver_limits(cfg_, LimitTarget{"c1", "i1", false, kPid}); }
  std::string fake_limits() {
    auto t = fs::read_file(dir_ + "/fake.json.limits");
    return t ? *t : "";
  }
  LedgerState ledger() { return *Ledger(LedgerOptions::from(cfg_)).read(); }

  std::string dir_, cgroup_;
  Config cfg_;
  Inventory inv_;
};

TEST_F(DriverLimit, SharesGetTheirLimitsRecordedAndSetPerGpu) {
  book("a", "0.25", 0);
  book("b", "0.5", 1);
  auto r = apply();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->set.size(), 2u);
  const std::uint64_t q = 81559ull / 4 << 20, h = 81559ull / 2 << 20;
  EXPECT_EQ(fake_limits(), text::cat(kGpu0, " ", q, " ", q, " /c1\n", kGpu1, " ", h, " ", h, " /c1\n"));
  const LedgerState s = ledger();
  ASSERT_EQ(s.entries.size(), 2u);
  EXPECT_EQ(s.entries[0].driver_limit, (gpufrac::DriverLimit{cgroup_ + "/c1", q, q}));
  EXPECT_EQ(s.entries[1].driver_limit, (gpufrac::DriverLimit{cgroup_ + "/c1", h, h}));
  auto again = apply();  // a later hook of the same container: nothing left to set
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->set.empty());
  auto drv = LimitDriver::open(cfg_);
  ASSERT_TRUE(drv);
  auto got = drv->get(kGpu0, cgroup_ + "/c1");
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->hard, q);
  EXPECT_EQ((*got)->used, 0u);
}

TEST_F(DriverLimit, AFailedSetClearsWhatItSetAndLeavesNoRecord) {
  book("a", "0.25", 0);
  book("b", "0.5", 1);
  ::setenv("GPUFRAC_FAKE_NVML_FAIL", "nvmlDeviceSetMemoryLimits_v1:4", 1);  // every call fails
  auto r = apply();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "driver memory limit of " + kGpu0 + " on " + cgroup_ +
                                   "/c1: nvmlDeviceSetMemoryLimits_v1: Insufficient Permissions (4); only root may "
                                   "set it: run gpufrac as root, or set enforcement: shim");
  EXPECT_EQ(r.error().kind, ErrorKind::user);
  EXPECT_EQ(fake_limits(), "");
  for (const auto& e : ledger().entries) EXPECT_FALSE(e.driver_limit) << e.device_key;
  // The first GPU's limit is set, the second GPU's refused (above its memory): the first is cleared.
  ::unsetenv("GPUFRAC_FAKE_NVML_FAIL");
  ASSERT_TRUE(Ledger(LedgerOptions::from(cfg_)).update([](LedgerState& s) -> Result<bool> {
    s.entries[1].bytes = (81559ull + 1) << 20;
    return true;
  }));
  r = apply();
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.starts_with("driver memory limit of " + kGpu1 + " on " + cgroup_ +
                                            "/c1: nvmlDeviceSetMemoryLimits_v1: Invalid Argument (2); soft "))
      << r.error().message;
  EXPECT_EQ(fake_limits(), "") << "the first GPU's limit was cleared again";
  for (const auto& e : ledger().entries) EXPECT_FALSE(e.driver_limit);
  // The cgroup is gone (the container's process died): the driver refuses the path.
  std::filesystem::remove_all(cgroup_ + "/c1");
  r = apply();
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().message.ends_with(
      ": nvmlDeviceSetMemoryLimits_v1: OS call failed or operation not supported on this OS (17); the driver cannot "
      "use that cgroup: it must be a cgroup v2 directory (check cgroup-root)"))
      << r.error().message;
  EXPECT_EQ(fake_limits(), "");
}

TEST_F(DriverLimit, EveryErrorCodeIsOneLineNamingTheCallAndWhatToDo) {
  const gpufrac::DriverLimit l{"/sys/fs/cgroup/c", 2, 1};
  for (auto [code, tail] :
       {std::pair<nvmlReturn_t, std::string>{NVML_ERROR_INVALID_ARGUMENT,
                                             "soft 2 and hard 1 bytes must be soft <= hard <= the GPU's memory"},
        {NVML_ERROR_NOT_SUPPORTED,
         "this GPU has no per-cgroup memory limits: set enforcement: shim (or auto) for this node"},
        {NVML_ERROR_NO_PERMISSION, "only root may set it: run gpufrac as root, or set enforcement: shim"},
        {NVML_ERROR_OPERATING_SYSTEM,
         "the driver cannot use that cgroup: it must be a cgroup v2 directory (check cgroup-root)"},
        {NVML_ERROR_FUNCTION_NOT_FOUND,
         "the driver has no per-cgroup memory limits (r615+): set enforcement: auto or shim"},
        {NVML_ERROR_UNKNOWN, "see the driver's messages (dmesg); enforcement: shim does without it"}}) {
    const Error e = limit_call_error("nvmlDeviceSetMemoryLimits_v1", "Text (n)", code, kGpu0, l);
    EXPECT_EQ(e.message, "driver memory limit of " + kGpu0 +
                             " on /sys/fs/cgroup/c: nvmlDeviceSetMemoryLimits_v1: "
                             "Text (n); " +
                             tail);
    EXPECT_EQ(e.message.find('\n'), std::string::npos);
  }
}

TEST_F(DriverLimit, AnAbsentCallIsTheShimUnderAutoAndARefusalUnderDriver) {
  book("a", "0.25", 0);
  ::setenv("GPUFRAC_FAKE_NVML_FAIL", "nvmlDeviceSetMemoryLimits_v1:13", 1);
  auto r = apply();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->set.empty());
  EXPECT_EQ(r->note, text::cat("the driver (", GPUFRAC_FAKE_NVML,
                               ") has no per-cgroup memory limits (r615+); the shim alone holds the shares"));
  EXPECT_FALSE(ledger().entries[0].driver_limit);
  use("h100-80gb-x3-r615.yaml", "driver");
  r = apply();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, text::cat("enforcement: driver: the driver (", GPUFRAC_FAKE_NVML,
                                         ") has no per-cgroup memory limits; set enforcement: auto to let the shim "
                                         "hold the shares"));
  EXPECT_FALSE(ledger().entries[0].driver_limit);
}

TEST_F(DriverLimit, ReleasedLimitsAreClearedOnTheirCgroupMadeAgainWhenTheRuntimeRemovedIt) {
  book("a", "0.25", 0);
  ASSERT_TRUE(apply());
  ASSERT_NE(fake_limits(), "");
  ASSERT_TRUE(Ledger(LedgerOptions::from(cfg_)).release("c1", "i1"));
  std::filesystem::remove(cgroup_ + "/c1");  // runc deleted the cgroup before poststop
  auto r = clear_driver_limits(cfg_);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->cleared.size(), 1u);
  EXPECT_TRUE(r->errors.empty());
  EXPECT_EQ(fake_limits(), "") << "the driver holds no limit for the cgroup";
  EXPECT_FALSE(std::filesystem::exists(cgroup_ + "/c1")) << "the directory made for the calls is removed again";
  EXPECT_TRUE(ledger().limits_to_clear.empty());
  auto none = clear_driver_limits(cfg_);  // nothing left: no driver opened
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->cleared.empty());
}

// Burstable memory: the driver holds soft = the request and hard = the limit; at release the soft
// limit is zeroed before the hard one is cleared (a leaf deleted with a soft limit leaves the
// reservation on its ancestors).
TEST_F(DriverLimit, ABurstShareHoldsSoftTheRequestHardTheLimitAndIsClearedSoftFirst) {
  ReserveArgs a;
  a.container_id = "c1";
  a.device_key = "a";
  a.request = **parse_request(
      {{"gpufrac.io/memory", "10Gi"}, {"gpufrac.io/memory-limit", "30Gi"}, {"gpufrac.io/gpu", "0"}}, true);
  a.pid = kPid;
  a.instance = "i1";
  ASSERT_TRUE(Ledger(LedgerOptions::from(cfg_)).reserve(a, inv_, cfg_.allocation));
  ASSERT_TRUE(apply());
  const std::uint64_t soft = 10ull << 30, hard = 30ull << 30;
  EXPECT_EQ(fake_limits(), text::cat(kGpu0, " ", soft, " ", hard, " /c1\n"));
  EXPECT_EQ(ledger().entries[0].driver_limit, (gpufrac::DriverLimit{cgroup_ + "/c1", soft, hard}));
  ASSERT_TRUE(Ledger(LedgerOptions::from(cfg_)).release("c1", "i1"));
  auto r = clear_driver_limits(cfg_);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fake_limits(), "");
  EXPECT_EQ(*fs::read_file(dir_ + "/fake.json.calls"),
            text::cat("set ", kGpu0, " /c1 ", soft, " ", hard, "\nset ", kGpu0, " /c1 0 ", hard, "\nset ", kGpu0,
                      " /c1 0 ", static_cast<std::uint64_t>(NVML_DEVICE_MEMORY_LIMIT_MAX), "\n"));
}

TEST_F(DriverLimit, ARecordOfACgroupABookingHoldsAgainIsDroppedWithoutACall) {
  book("a", "0.25", 0);
  ASSERT_TRUE(apply());
  ASSERT_TRUE(Ledger(LedgerOptions::from(cfg_)).release("c1", "i1"));
  book("a", "0.25", 0);  // the same container id and cgroup again, before the old limit was cleared
  ASSERT_TRUE(apply());
  EXPECT_TRUE(ledger().limits_to_clear.empty()) << "the new limit replaces the old record";
  EXPECT_NE(fake_limits(), "") << "and it stays set";
}

// A Kubernetes claim (gpufrac-dra's booking): its limit goes on the pod's cgroup, the parent of the
// container's, which every container of the pod shares as they share the claim; unpreparing it
// (release_claim) leaves the limit to clear, which gpufrac-dra clears in process.
TEST_F(DriverLimit, AClaimsLimitIsOnThePodsCgroupAndClearedAfterUnprepare) {
  const std::string uid = "0b1c2d3e-aaaa-bbbb-cccc-111122223333";
  ASSERT_TRUE(fs::make_dirs(cgroup_ + "/pod1/ctr1"));
  ASSERT_TRUE(fs::write_file_atomic(text::cat(dir_, "/proc/", kPid, "/cgroup"), "0::/pod1/ctr1\n"));
  ReserveArgs a;
  a.container_id = uid;
  a.device_key = "gpu-0/share";
  a.request = **parse_request({{"gpufrac.io/memory", "8Gi"}, {"gpufrac.io/gpu", "0"}}, true);
  a.source = BookingSource::dra;
  a.instance = "dra";
  a.claim = "ns/claim1";
  ASSERT_TRUE(Ledger(LedgerOptions::from(cfg_)).reserve(a, inv_, cfg_.allocation));
  auto r = apply_driver_limits(cfg_, LimitTarget{uid, "", true, kPid});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fake_limits(), text::cat(kGpu0, " ", 8ull << 30, " ", 8ull << 30, " /pod1\n"));
  EXPECT_EQ(ledger().entries[0].driver_limit->cgroup, cgroup_ + "/pod1");
  auto released = Ledger(LedgerOptions::from(cfg_)).release_claim(uid);
  ASSERT_TRUE(released);
  ASSERT_EQ(ledger().limits_to_clear.size(), 1u);
  EXPECT_EQ(ledger().limits_to_clear[0].owner, uid + "@dra");
  ASSERT_TRUE(clear_driver_limits(cfg_));
  EXPECT_EQ(fake_limits(), "");
}

// The fake's own rules, through the library as the backend loads it.
TEST_F(DriverLimit, TheFakeKeepsTheDriversRules) {
  void* lib = ::dlopen(GPUFRAC_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  auto init = reinterpret_cast<decltype(&::nvmlInit_v2)>(::dlsym(lib, "nvmlInit_v2"));
  auto by_index =
      reinterpret_cast<decltype(&::nvmlDeviceGetHandleByIndex_v2)>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto by_uuid = reinterpret_cast<decltype(&::nvmlDeviceGetHandleByUUID)>(::dlsym(lib, "nvmlDeviceGetHandleByUUID"));
  auto set = reinterpret_cast<decltype(&::nvmlDeviceSetMemoryLimits_v1)>(::dlsym(lib, "nvmlDeviceSetMemoryLimits_v1"));
  auto get = reinterpret_cast<decltype(&::nvmlDeviceGetMemoryLimits_v1)>(::dlsym(lib, "nvmlDeviceGetMemoryLimits_v1"));
  auto shutdown = reinterpret_cast<decltype(&::nvmlShutdown)>(::dlsym(lib, "nvmlShutdown"));
  ASSERT_EQ(init(), NVML_SUCCESS);
  nvmlDevice_t gpu = nullptr, mig = nullptr;
  ASSERT_EQ(by_index(0, &gpu), NVML_SUCCESS);
  ASSERT_EQ(by_uuid("MIG-4e8a1c37-9b2d-4f60-a5c3-12e7d0b98f46", &mig), NVML_SUCCESS);
  const std::string c1 = cgroup_ + "/c1";
  auto set_limits = [&](nvmlDevice_t d, const std::string& ns, unsigned long long soft, unsigned long long hard) {
    nvmlSetMemoryLimits_v1_t l{ns.c_str(), soft, hard};
    return set(d, &l);
  };
  nvmlGetMemoryLimits_v1_t g{c1.c_str(), 0, 0, 0};
  EXPECT_EQ(get(gpu, &g), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(set_limits(gpu, c1, 2, 1), NVML_ERROR_INVALID_ARGUMENT) << "soft above hard";
  EXPECT_EQ(set_limits(gpu, c1, 0, (81559ull << 20) + 1), NVML_ERROR_INVALID_ARGUMENT) << "above the GPU's memory";
  EXPECT_EQ(set_limits(mig, c1, 0, 1), NVML_ERROR_NOT_SUPPORTED) << "MIG handles";
  EXPECT_EQ(set_limits(gpu, cgroup_ + "/gone", 0, 1), NVML_ERROR_OPERATING_SYSTEM);
  EXPECT_EQ(set_limits(gpu, "/etc", 0, 1), NVML_ERROR_OPERATING_SYSTEM) << "not under the cgroup root";
  EXPECT_EQ(set_limits(gpu, c1, 1, 2), NVML_SUCCESS);
  EXPECT_EQ(get(gpu, &g), NVML_SUCCESS);
  EXPECT_EQ(g.softLimit, 1u);
  EXPECT_EQ(g.hardLimit, 2u);
  std::filesystem::permissions(dir_, std::filesystem::perms(0755));  // nobody reads the state as a user may
  const pid_t child = ::fork();
  if (child == 0) _exit(::setuid(65534) == 0 && set_limits(gpu, c1, 0, 1) == NVML_ERROR_NO_PERMISSION ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a caller that is not root: NO_PERMISSION";
  // Within the limited cgroup (this process's own), nvmlDeviceGetMemoryInfo_v2 reports the partition.
  auto memory_v2 =
      reinterpret_cast<decltype(&::nvmlDeviceGetMemoryInfo_v2)>(::dlsym(lib, "nvmlDeviceGetMemoryInfo_v2"));
  std::string own = "/";
  for (const auto& line : text::split(*fs::read_file("/proc/self/cgroup"), '\n'))
    if (line.starts_with("0::")) own = line.substr(3);
  const std::string own_dir = own == "/" ? cgroup_ : cgroup_ + own;
  ASSERT_TRUE(fs::make_dirs(own_dir));
  nvmlMemory_v2_t m{};
  m.version = nvmlMemory_v2;
  ASSERT_EQ(memory_v2(gpu, &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, 81559ull << 20);
  ASSERT_EQ(set_limits(gpu, own_dir, 1u << 30, 3u << 30), NVML_SUCCESS);
  ASSERT_EQ(memory_v2(gpu, &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, 3ull << 30) << "the hard limit is the total within the partition";
  EXPECT_EQ(m.free, 3ull << 30);
  ASSERT_EQ(set_limits(gpu, own_dir, 0, NVML_DEVICE_MEMORY_LIMIT_MAX), NVML_SUCCESS);
  EXPECT_EQ(set_limits(gpu, c1, 0, 2), NVML_SUCCESS) << "soft to 0 first";
  EXPECT_EQ(set_limits(gpu, c1, 0, NVML_DEVICE_MEMORY_LIMIT_MAX), NVML_SUCCESS) << "then hard to MAX: cleared";
  EXPECT_EQ(get(gpu, &g), NVML_ERROR_NOT_FOUND);
  shutdown();
  ::setenv("GPUFRAC_FAKE_NVML_MACHINE", (kMachines + "a100-40gb-x1.yaml").c_str(), 1);
  ::unsetenv("GPUFRAC_FAKE_NVML_STATE");
  ASSERT_EQ(init(), NVML_SUCCESS);
  ASSERT_EQ(by_index(0, &gpu), NVML_SUCCESS);
  EXPECT_EQ(set_limits(gpu, c1, 0, 1), NVML_ERROR_FUNCTION_NOT_FOUND) << "a driver before r615";
  shutdown();
  ::dlclose(lib);
}

}  // namespace
}  // namespace gpufrac
