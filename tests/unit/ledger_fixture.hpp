// The ledger tests' fixture: a two-GPU A100 machine, a fixture proc root with pids 100 and 200,
// a ledger under a temporary directory and a clock the test sets.
#pragma once

#include <gtest/gtest.h>

#include <sys/mount.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/ledger/ledger.hpp"
#include "core/request/request.hpp"
#include "fake_proc.hpp"
#include "nvml/simulated.hpp"

namespace gpufrac::testing {

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("ledger");
    proc_ = dir_ + "/proc";
    auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/a100-40gb-x2.yaml");
    ASSERT_TRUE(m);
    inv_ = m->inventory;
    testing::write_stat(proc_, 100, 'S', 5000);
    testing::write_stat(proc_, 200, 'S', 6000);
  }
  // Booking a compute share mounts its GPU's arbiter tmpfs under the state directory (as root):
  // detach every mount under dir_ before removing it.
  void TearDown() override {
    std::ifstream mounts("/proc/self/mounts");
    std::vector<std::string> under;
    for (std::string dev, at, rest; mounts >> dev >> at && std::getline(mounts, rest);)
      if (at.starts_with(dir_ + "/")) under.push_back(at);
    for (auto it = under.rbegin(); it != under.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    std::filesystem::remove_all(dir_);
  }

  Ledger ledger() {
    LedgerOptions o;
    o.path = dir_ + "/state/ledger.json";
    o.lock_path = dir_ + "/state/ledger.lock";
    o.proc_root = proc_;
    o.pending_timeout_s = 120;
    o.clock = [this] { return now_; };
    return Ledger(o);
  }

  ReserveArgs args(const std::string& id, const std::string& fraction, std::int64_t pid = 100) {
    ReserveArgs a;
    a.container_id = id;
    a.request = **parse_request({{"gpufrac.io/fraction", fraction}}, true);
    a.pid = pid;
    return a;
  }

  std::vector<LedgerEntry> entries() {
    auto s = ledger().read();
    EXPECT_TRUE(s) << s.error().message;
    return s ? s->entries : std::vector<LedgerEntry>{};
  }

  std::string dir_, proc_;
  Inventory inv_;
  AllocationConfig cfg_;
  std::int64_t now_ = 1'700'000'000;
};

// One booking as the ledger files of these tests hold it: container c1 on an A100's GPU, a
// quarter of it, started by pid 4242.
inline LedgerEntry sample_entry() {
  LedgerEntry e;
  e.container_id = "c1";
  e.device_uuid = "GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5";
  e.gpu_uuid = e.device_uuid;
  e.bytes = 10626269184;
  e.request = "fraction=0.25";
  e.pid = 4242;
  e.pid_start = 987654;
  e.created = 1700000000;
  return e;
}

}  // namespace gpufrac::testing
