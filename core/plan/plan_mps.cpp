#include "core/plan/plan_mps.hpp"

#include "core/request/compute_share.hpp"
#include "core/text.hpp"
#include "gpufrac/limits_abi.h"

namespace gpufrac {

std::string mps_dir(const Config& cfg, const std::string& gpu_uuid) {
  return cfg.state_dir + "/mps/" + gpu_uuid;
}
std::string mps_pipe_dir(const Config& cfg, const std::string& gpu_uuid) {
  return mps_dir(cfg, gpu_uuid) + "/pipe";
}
std::string mps_shm_dir(const Config& cfg, const std::string& gpu_uuid) {
  return mps_dir(cfg, gpu_uuid) + "/shm";
}
std::string mps_log_dir(const Config& cfg, const std::string& gpu_uuid) {
  return mps_dir(cfg, gpu_uuid) + "/log";
}
std::string mps_lock_path(const Config& cfg, const std::string& gpu_uuid) {
  return cfg.state_dir + "/mps-" + gpu_uuid + ".lock";
}

const Grant* sm_grant_of(const std::vector<Grant>& grants) {
  for (const auto& g : grants)
    if (is_sm_share(g.compute_ppm, g.compute_mode)) return &g;
  return nullptr;
}

std::vector<EditMount> plan_mps_mounts(const std::vector<Grant>& grants, const Config& cfg) {
  const Grant* g = sm_grant_of(grants);
  if (g == nullptr) return {};
  const std::vector<std::string> options = {"nosuid", "nodev", "noexec", "bind"};
  return {{mps_pipe_dir(cfg, g->gpu_uuid), GPUFRAC_CONTAINER_MPS_PIPE, "bind", options},
          {mps_shm_dir(cfg, g->gpu_uuid), "/dev/shm", "bind", options}};
}

bool is_mps_mount(const EditMount& m, const Config& cfg) {
  const std::string dir = cfg.state_dir + "/mps/";
  return m.host_path.starts_with(dir) &&
         (m.container_path == GPUFRAC_CONTAINER_MPS_PIPE || m.container_path == "/dev/shm");
}

std::vector<std::string> plan_mps_env(const std::vector<Grant>& grants) {
  const Grant* g = sm_grant_of(grants);
  if (g == nullptr) return {};
  return {std::string("CUDA_MPS_PIPE_DIRECTORY=") + GPUFRAC_CONTAINER_MPS_PIPE,
          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + format_compute_percent(g->compute_ppm),
          text::cat("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=", g->gpu_uuid, "=", g->bytes >> 20, "M")};
}

}  // namespace gpufrac
