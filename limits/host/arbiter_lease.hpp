// The lease file of a GPU's compute arbiter (gpufrac/arbiter_abi.h) as the host touches it. Every
// container with a compute share on the GPU can write it through its read-write bind: its bytes, and
// also its size (ftruncate, writes past its end) and its mode and owner (chmod, chown: a root tenant
// can always change a bound file's metadata). So the host never maps it: it reads a bounded copy with
// pread, writes fixed fields with pwrite, and puts the file back the way it made it (size, in place;
// mode 0666; owner; header), so the GPU's containers keep one arbiter.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpufrac/arbiter_abi.h"

namespace gpufrac::limits {

constexpr mode_t kLeaseFileMode = 0666;

struct LeaseCopy {
  std::unique_ptr<gpufrac_arbiter> lease;  // the file's first sizeof(gpufrac_arbiter) bytes (zero past its end)
  std::uint64_t size = 0;                  // the file's size as found
  // How the file differs from what the host made, one phrase each ("its lease file is 0 bytes (the
  // host made 49408)", "its lease file's mode is 0600 (the host made 0666)", ... owner). Empty when
  // none.
  std::vector<std::string> wrong;
};

// A bounded copy of the lease file (never mapped); its owner is compared with owner (the slots
// file's: the host made both, whoever reads them now). A missing file, or one that is not a regular
// file, is an error.
struct FileOwner {
  uid_t uid;
  gid_t gid;
};
Result<LeaseCopy> read_lease_file(const std::string& path, FileOwner owner);

// What repair_lease_file put back: GPUFRAC_LEASE_REPAIRED_* bits, and one phrase each.
struct LeaseRepair {
  unsigned what = 0;
  std::vector<std::string> phrases;
};

// Puts the lease file back as the host made it, in place (the containers keep their mappings of the
// same file): its size (ftruncate to the arbiter's size, then posix_fallocate), mode 0666, owner
// (this process's euid and egid) and header (pwrite of the first 16 bytes). Returns what it repaired
// (what 0: nothing was wrong). An error when the file cannot be opened.
Result<LeaseRepair> repair_lease_file(const std::string& path);

// Writes a fresh lease file at path (a temporary the caller links in place as final, which errors
// name): allocated in full, mode 0666, its header written with pwrite.
Result<> write_new_lease_file(const std::string& path, const std::string& final);

}  // namespace gpufrac::limits
