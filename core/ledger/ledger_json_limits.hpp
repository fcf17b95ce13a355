// The ledger's driver limits in JSON (version 5, core/ledger/ledger_json.hpp): an entry's
// "driver_limit": {"cgroup": "/sys/fs/cgroup/...", "soft": <bytes>, "hard": <bytes>} and the top-level
// "limits_to_clear": [{"gpu": "GPU-...", "cgroup": ..., "soft": ..., "hard": ..., "owner": "<container
// key>", "since": <seconds>}], read as strictly as the rest (exact keys and types, valid paths, soft
// at most hard, one record per GPU and cgroup). Kept apart from ledger_json.cpp, which calls them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"
#include "core/ledger/ledger_entry.hpp"

namespace gpufrac {

// `path` names the object in messages ("entries[3].driver_limit").
Result<DriverLimit> read_driver_limit(const nlohmann::json& obj, const std::string& path);
Result<std::vector<LimitToClear>> read_limits_to_clear(const nlohmann::json& doc, const std::string& name);

// The checks both readers apply to values: (field, problem) of the first, or nullopt.
std::optional<std::pair<std::string_view, std::string_view>> driver_limit_problem(const DriverLimit& l);
std::optional<std::pair<std::string_view, std::string_view>> limit_to_clear_problem(const LimitToClear& r);
// Two records of one (GPU, cgroup).
bool duplicate_limits_to_clear(const std::vector<LimitToClear>& records);

}  // namespace gpufrac
