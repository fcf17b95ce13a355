// What a dynamic MIG change holds while it runs: the per-GPU lock, the intent journal and the open
// NVML library.
//  - Lock: flock on <state-dir>/mig-<gpu uuid>.lock serialises every MIG change of one GPU (the
//    provisioner, gc); the kernel drops it when the holder dies. Taken before the ledger lock,
//    never while holding it.
//  - Journal: <state-dir>/mig-<gpu uuid>.journal is written before a GPU instance is created (or a
//    compute instance added to one) and removed once the compute instance exists and is written
//    down as made (mig_made.hpp), so a process killed in between leaves the change behind; the
//    next holder of the lock destroys a GPU instance there that has no compute instance and adopts
//    a compute instance it made (recover_mig_journal in mig_steps.hpp).
//  - Driver: the configured NVML library, opened and initialised; shut down on destruction.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "nvml/nvml_library.hpp"

namespace gpufrac {

class MigGpuLock {
 public:
  static Result<MigGpuLock> acquire(const Config& cfg, const std::string& gpu_uuid);

 private:
  explicit MigGpuLock(fs::UniqueFd fd) : fd_(std::move(fd)) {}
  fs::UniqueFd fd_;
};

struct MigJournal {
  std::string gpu_uuid;
  std::uint32_t profile_id = 0;
  std::string profile;
  std::uint32_t start = 0;  // memory slice of the placement
  std::string container;    // who asked
  std::int64_t time = 0;
  // A compute instance added to the existing GPU instance `gi`, which had the compute instances
  // `cis_before` (unset: a new GPU instance with its compute instance; journals written before
  // compute instances were made this way have neither).
  std::optional<std::uint32_t> gi;
  std::vector<std::uint32_t> cis_before;
  bool operator==(const MigJournal&) const = default;
};

std::string mig_lock_path(const Config& cfg, const std::string& gpu_uuid);
std::string mig_journal_path(const Config& cfg, const std::string& gpu_uuid);
Result<> write_mig_journal(const Config& cfg, const MigJournal& journal);
// nullopt when there is none; a damaged journal is an error naming the file.
Result<std::optional<MigJournal>> read_mig_journal(const Config& cfg, const std::string& gpu_uuid);
Result<> remove_mig_journal(const Config& cfg, const std::string& gpu_uuid);

class MigDriver {
 public:
  // The library of nvml.library; the simulated backend cannot change MIG and is refused.
  static Result<MigDriver> open(const Config& cfg);
  MigDriver(MigDriver&&) noexcept = default;
  MigDriver& operator=(MigDriver&&) noexcept = default;
  ~MigDriver();
  const nvml::Library& lib() const { return *lib_; }

 private:
  explicit MigDriver(std::unique_ptr<nvml::Library> lib) : lib_(std::move(lib)) {}
  std::unique_ptr<nvml::Library> lib_;
};

}  // namespace gpufrac
