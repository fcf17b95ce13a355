// The ledger: every booking on this node, in <state-dir>/ledger.json (docs/architecture.md "The
// ledger and a booking's life"). Each operation that changes it runs under flock(ledger.lock) as
// read-modify-write and replaces the file atomically; a process killed at any instant leaves the
// old or the new ledger. Bookings of dead processes (pid + start time) and pending bookings older
// than the pending timeout are reclaimed by gc() and every update(); a reservation drops expired
// pending ones and checks processes only when it would otherwise refuse.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/plan/grant.hpp"
#include "core/request/request.hpp"

namespace gpufrac {

struct LedgerOptions {
  std::string path;       // ledger.json
  std::string lock_path;  // ledger.lock
  std::string proc_root = "/proc";
  std::uint32_t pending_timeout_s = 120;
  std::uint64_t lock_timeout_ms = 10000;  // waiting for ledger.lock longer is an error
  std::function<std::int64_t()> clock;    // seconds since the epoch; empty = the system clock
  // Dynamic-MIG GPUs: their released instances are recorded idle (ledger_mig.hpp).
  MigConfig mig;

  static LedgerOptions from(const Config& cfg);
};

struct ReserveArgs {
  std::string container_id;
  std::string device_key;  // "" for annotation requests; the CDI device name for CDI
  Request request;
  BookingSource source = BookingSource::hook;
  std::int64_t pid = 0;                    // host pid; 0 = pending (attach() adds it later)
  std::optional<std::uint64_t> pid_start;  // read from <proc-root>/<pid>/stat when absent
  std::string instance;                    // LedgerEntry::instance ("" only for operator bookings)
  std::string claim;                       // source dra: "<namespace>/<name>" (container_id = claim uid)
};

// A booking reclaimed because its process is gone or it stayed pending too long.
struct Reclaimed {
  LedgerEntry entry;
  std::string why;  // "process 123 exited", "pid 123 was reused", "pending for 130 s"
};

struct Booking {
  Grant grant;                // the first of `grants`
  std::vector<Grant> grants;  // one per GPU of the request (several for gpufrac.io/gpus), by index
  bool existing = false;      // the same (container id, instance, device key) was booked before: same grant
  std::vector<Reclaimed> reclaimed;
};

struct GcReport {
  std::vector<Reclaimed> reclaimed;
  std::vector<std::string> temp_files_removed;
  std::size_t kept = 0;
};

class Ledger {
 public:
  explicit Ledger(LedgerOptions options);

  // Books a device for a container instance (idempotent per container id + instance + device key:
  // another instance with the same id gets a booking of its own). A multi-GPU request books every
  // GPU in this one transaction (each its own entry, keyed gpus_device_key) or none.
  Result<Booking> reserve(const ReserveArgs& args, const Inventory& inventory, const AllocationConfig& config);
  // Gives the instance's pending bookings their pid ("" instance: every booking of the id); returns
  // them. An instance with no booking (released, or reclaimed after the pending timeout) is an error.
  Result<std::vector<LedgerEntry>> attach(const std::string& container_id, std::int64_t pid,
                                          std::optional<std::uint64_t> pid_start = std::nullopt,
                                          const std::string& instance = "");
  // Removes the instance's bookings ("" instance: every booking of the id); nothing is not an error.
  Result<std::vector<LedgerEntry>> release(const std::string& container_id, const std::string& instance = "");
  // Poststop: removes the bookings of this id that belong to the stopped container: those of
  // `instance` when given, of `pid` when given, and any whose process is gone. A live process's
  // booking under the same id (another runtime root) stays.
  Result<std::vector<LedgerEntry>> release_stopped(const std::string& container_id, const std::string& instance,
                                                   std::int64_t pid);
  // Kubernetes claims (source dra): their bookings are never reclaimed by liveness and never touched
  // by the container operations above; only this releases them (all of the claim's).
  Result<std::vector<LedgerEntry>> release_claim(const std::string& uid);
  Result<std::vector<LedgerEntry>> bookings_of_claim(const std::string& uid) const;
  // Reclaims the bookings of dead processes and expired pending ones, removes stale temp files.
  Result<GcReport> gc();
  // Sets ledger.reserve to what the ledger now needs (ledger_file.hpp): made again when a release on a
  // full state directory used it up and could not remake it, shrunk after the ledger shrank.
  Result<> fit_reserve();
  // The current content, without the lock (the file is only ever replaced whole).
  Result<LedgerState> read() const;
  // The bookings a container instance holds now ("" instance: the id's; read, no lock held after).
  Result<std::vector<LedgerEntry>> bookings_of(const std::string& container_id, const std::string& instance = "") const;

  // Dynamic MIG (nvml/mig_provision.hpp). Books exactly `grant` (an instance the provisioner made
  // or chose), idempotent like reserve(); refused when another booking holds the device, when the
  // container holds a compute instance of the same GPU instance, or when the GPU instance's
  // bookings would pass `gi_memory` (its memory; 0: not checked).
  Result<Booking> reserve_granted(const ReserveArgs& args, const Grant& grant, std::uint64_t gi_memory = 0);
  // Runs `change` on the content under the lock, after reclaiming dead bookings; saves when either
  // changed something (`change` returns whether it did). Returns what was reclaimed.
  using Change = std::function<Result<bool>(LedgerState&)>;
  Result<std::vector<Reclaimed>> update(const Change& change);

  const LedgerOptions& options() const { return options_; }

 private:
  std::int64_t now() const;
  // Drops expired pending bookings and, with `processes`, those whose process is gone (a read of
  // /proc/<pid>/stat per booking: the expensive part of a reservation on a full node).
  std::vector<Reclaimed> reclaim(LedgerState& state, bool processes = true) const;
  // Why the entry's booking is over ("" while it holds): its process is gone or it stayed pending.
  std::string expiry(const LedgerEntry& e, std::int64_t now) const;
  // Removes the bookings of the id that `doomed` selects, under the lock; returns them.
  Result<std::vector<LedgerEntry>> remove_if(const std::string& container_id,
                                             const std::function<bool(const LedgerEntry&)>& doomed);
  Result<std::uint64_t> start_time_of(std::int64_t pid, std::optional<std::uint64_t> given) const;
  // The container id, instance and device key checked, then start_time_of(a.pid, a.pid_start).
  Result<std::uint64_t> checked_start(const ReserveArgs& a) const;

  LedgerOptions options_;
};

}  // namespace gpufrac
