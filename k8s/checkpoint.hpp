// What gpufrac-dra has prepared, kept across its restarts (the kubelet re-sends prepare for running
// pods and may send unprepare for a claim the API server no longer has) in
// <kubelet dir>/plugins/gpufrac.io/checkpoint.json. Two phases per claim: `started` is written
// before any booking or file, `completed` after the CDI spec; a restart rolls back what is still
// `started`. The file carries a checksum of its content: a truncated or edited checkpoint is
// refused with its path, never silently started on. Written atomically (temp file, rename; no
// fsync: it has to outlive the plugin, not a reboot, after which no claim's container runs).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::dra {

struct PreparedDevice {
  std::string request;
  std::string pool;
  std::string device;
  std::string share_id;
  std::vector<std::string> cdi_ids;
  bool operator==(const PreparedDevice&) const = default;
};

enum class PrepareState { started, completed };

struct PreparedClaim {
  std::string ns;
  std::string name;
  PrepareState state = PrepareState::started;
  std::vector<PreparedDevice> devices;  // completed only
  bool operator==(const PreparedClaim&) const = default;
};

struct Checkpoint {
  std::map<std::string, PreparedClaim> claims;  // by claim uid
  bool operator==(const Checkpoint&) const = default;
};

std::string checkpoint_text(const Checkpoint& cp);
Result<Checkpoint> parse_checkpoint(const std::string& text, const std::string& path);
// A missing file is an empty checkpoint; anything unreadable or damaged is an error naming it.
Result<Checkpoint> load_checkpoint(const std::string& path);
Result<> save_checkpoint(const std::string& path, const Checkpoint& cp);

}  // namespace gpufrac::dra
