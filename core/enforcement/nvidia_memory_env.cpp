#include "core/enforcement/nvidia_memory_env.hpp"

#include <optional>

#include "core/enforcement/enforcement.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

// The value `env` gives the key (the last one, as a runtime reads it), or nullopt.
std::optional<std::string> value_of(const std::vector<std::string>& env, const std::string& key) {
  std::optional<std::string> v;
  for (const auto& kv : env)
    if (kv.starts_with(key + "=")) v = kv.substr(key.size() + 1);
  return v;
}

struct MiB {
  std::uint64_t hard = 0, soft = 0;
};

// gpufrac's one value for every GPU of the container's shares; nullopt without a share.
Result<std::optional<MiB>> gpufrac_values(const std::vector<LedgerEntry>& bookings, const Config& cfg) {
  std::optional<MiB> out;
  for (const auto& e : bookings) {
    if (!is_share(e)) continue;
    const MiB v{e.limit() >> 20, guaranteed_bytes(e.bytes, cfg.allocation.overcommit) >> 20};
    if (out && (out->hard != v.hard || out->soft != v.soft))
      return user_error(text::cat(kNvidiaMemoryLimitEnv,
                                  " holds one value for every GPU, and the container's shares "
                                  "differ between GPUs (",
                                  out->hard, " and ", v.hard,
                                  " MiB); remove NVIDIA_GPU_MEMORY_LIMIT and NVIDIA_GPU_MEMORY_REQUEST: gpufrac "
                                  "limits each GPU itself"));
    out = v;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> nvidia_memory_env(const std::vector<std::string>& env,
                                                   const std::vector<LedgerEntry>& bookings, const Config& cfg) {
  const auto limit = value_of(env, kNvidiaMemoryLimitEnv), request = value_of(env, kNvidiaMemoryRequestEnv);
  if (!limit && !request) return std::vector<std::string>{};
  auto mine = gpufrac_values(bookings, cfg);
  if (!mine) return std::unexpected(mine.error());
  std::vector<std::string> out;
  if (!*mine) return out;
  if (limit) out.push_back(text::cat(kNvidiaMemoryLimitEnv, "=", (*mine)->hard));
  if (request) out.push_back(text::cat(kNvidiaMemoryRequestEnv, "=", (*mine)->soft));
  return out;
}

Result<> check_nvidia_memory_env(const std::vector<std::string>& env, const std::vector<LedgerEntry>& bookings,
                                 const Config& cfg) {
  auto wanted = nvidia_memory_env(env, bookings, cfg);
  if (!wanted) return std::unexpected(wanted.error());
  for (const auto& kv : *wanted) {
    const std::string key = kv.substr(0, kv.find('=')), mine = kv.substr(key.size() + 1);
    const std::string theirs = *value_of(env, key);
    if (theirs != mine)
      return user_error(text::cat(key, "=", text::quote(theirs), " disagrees with gpufrac's ", mine,
                                  " MiB for this container's share; remove it or set ", key, "=", mine,
                                  " (gpufrac-runtime writes gpufrac's value itself), so the driver holds one limit"));
  }
  return {};
}

}  // namespace gpufrac
