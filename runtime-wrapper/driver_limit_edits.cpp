#include "runtime-wrapper/driver_limit_edits.hpp"

#include "core/enforcement/nvidia_memory_env.hpp"
#include "exec/driver_limit_exec.hpp"

namespace gpufrac::wrapper {

Result<> add_driver_limit_edits(Edits& edits, std::vector<std::string>& attach_args,
                                const std::vector<LedgerEntry>& bookings, const Inventory& inventory, const Config& cfg,
                                const std::vector<std::string>& spec_env) {
  auto memory_env = nvidia_memory_env(spec_env, bookings, cfg);
  if (!memory_env) return std::unexpected(memory_env.error());
  edits.env.insert(edits.env.end(), memory_env->begin(), memory_env->end());
  auto wanted = driver_limits_wanted(bookings, inventory, cfg);
  if (!wanted) return std::unexpected(wanted.error());
  if (*wanted) attach_args.push_back("--driver-limit");
  return {};
}

}  // namespace gpufrac::wrapper
