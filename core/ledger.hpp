// The ledger: every booking on this node, in <state-dir>/ledger.json (docs/architecture.md "The
// ledger and a booking's life"). Each operation that changes it runs under flock(ledger.lock) as
// read-modify-write and replaces the file atomically; a process killed at any instant leaves the
// old or the new ledger. Bookings of dead processes (pid + start time) and pending bookings older
// than the pending timeout are reclaimed by every reservation and by gc().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/grant.hpp"
#include "core/inventory.hpp"
#include "core/ledger_entry.hpp"
#include "core/request.hpp"

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
};

// A booking reclaimed because its process is gone or it stayed pending too long.
struct Reclaimed {
  LedgerEntry entry;
  std::string why;  // "process 123 exited", "pid 123 was reused", "pending for 130 s"
};

struct Booking {
  Grant grant;
  bool existing = false;  // the same (container id, device key) was booked before: same grant
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

  // Books a device for a container (idempotent per container id + device key).
  Result<Booking> reserve(const ReserveArgs& args, const Inventory& inventory, const AllocationConfig& config);
  // Gives the container's pending bookings their pid; returns the container's bookings.
  // A container with no booking (released, or reclaimed after the pending timeout) is an error.
  Result<std::vector<LedgerEntry>> attach(const std::string& container_id, std::int64_t pid,
                                          std::optional<std::uint64_t> pid_start = std::nullopt);
  // Removes every booking of the container; releasing nothing is not an error.
  Result<std::vector<LedgerEntry>> release(const std::string& container_id);
  // Reclaims the bookings of dead processes and expired pending ones, removes stale temp files.
  Result<GcReport> gc();
  // The current content, without the lock (the file is only ever replaced whole).
  Result<LedgerState> read() const;
  // The bookings a container holds now (read, no lock held afterwards).
  Result<std::vector<LedgerEntry>> bookings_of(const std::string& container_id) const;

  // Dynamic MIG (nvml/mig_provision.hpp). Books exactly `grant` (an instance the provisioner made
  // or chose), idempotent like reserve(); refused when another booking holds the device.
  Result<Booking> reserve_granted(const ReserveArgs& args, const Grant& grant);
  // Runs `change` on the content under the lock, after reclaiming dead bookings; saves when either
  // changed something (`change` returns whether it did). Returns what was reclaimed.
  using Change = std::function<Result<bool>(LedgerState&)>;
  Result<std::vector<Reclaimed>> update(const Change& change);

  const LedgerOptions& options() const { return options_; }

 private:
  std::int64_t now() const;
  std::vector<Reclaimed> reclaim(LedgerState& state) const;
  Result<std::uint64_t> start_time_of(std::int64_t pid, std::optional<std::uint64_t> given) const;
  // The container id and device key checked, then start_time_of(a.pid, a.pid_start).
  Result<std::uint64_t> checked_start(const ReserveArgs& a) const;

  LedgerOptions options_;
};

}  // namespace gpufrac
