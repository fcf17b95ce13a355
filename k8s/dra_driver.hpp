// What gpufrac-dra does for the kubelet, independent of gRPC: prepare a claim (fetch it, check it,
// book each result in the ledger under the claim, write its files and CDI spec, record it in the
// checkpoint in two phases) and unprepare it (remove the spec and files, release the bookings,
// forget it). Idempotent both ways; one claim's failure never touches another's; calls are
// serialized (the kubelet may send them concurrently). A restart first rolls back claims left
// half-prepared and releases claim bookings the checkpoint does not know; a periodic sync releases
// claims deleted (or replaced) while nobody unprepared them. Every state change holds
// flock(<plugin dir>/serialize.lock) and first re-reads the checkpoint if another process wrote it:
// during a rolling update two instances serve the kubelet, and either may unprepare what the other
// prepared.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/ledger/ledger_file.hpp"
#include "k8s/api_client.hpp"
#include "k8s/checkpoint.hpp"
#include "k8s/claim.hpp"

namespace gpufrac::dra {

struct DriverOptions {
  std::string node;
  std::string cdi_dir = "/var/run/cdi";
  std::string checkpoint_path;  // <kubelet dir>/plugins/gpufrac.io/checkpoint.json
};

struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;  // "" on success: one line naming the claim
};

class DraDriver {
 public:
  DraDriver(Config cfg, DriverOptions options, const ApiClient& api);
  // Loads the checkpoint (a damaged one is an error), rolls back half-prepared claims and
  // releases orphaned claim bookings.
  Result<> start();
  PrepareResult prepare(const ClaimRef& claim);
  std::string unprepare(const ClaimRef& claim);  // "" on success
  // Unprepares the prepared claims the API server no longer has under the same uid.
  void sync();
  const Config& config() const { return cfg_; }

 private:
  Result<std::vector<PreparedDevice>> prepare_locked(const ClaimRef& claim);
  Result<> unprepare_locked(const std::string& uid);
  void clear_claim_limits(const std::vector<LedgerEntry>& released) const;
  Result<nlohmann::json> fetch(const ClaimRef& claim) const;
  // The cross-process lock, with the checkpoint brought up to date under it.
  Result<LedgerLock> serialize();
  Result<> save();

  struct FileStamp {
    ino_t ino = 0;
    off_t size = -1;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileStamp&) const = default;
  };
  FileStamp checkpoint_stamp() const;

  Config cfg_;
  DriverOptions options_;
  const ApiClient& api_;
  std::mutex mutex_;
  Checkpoint checkpoint_;
  FileStamp stamp_;  // of the checkpoint file as this process last read or wrote it
};

}  // namespace gpufrac::dra
