#include "nvml/driver_limits.hpp"

#include "core/text.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac {

namespace {

// What to do about each error the calls return.
std::string remedy(std::string_view call, nvmlReturn_t code, const DriverLimit& l) {
  const bool get = call.find("Get") != std::string_view::npos;
  switch (code) {
    case NVML_ERROR_NO_PERMISSION:
      return get ? "the driver refused to read it: run gpufrac as root"
                 : "only root may set it: run gpufrac as root, or set enforcement: shim";
    case NVML_ERROR_INVALID_ARGUMENT:
      return text::cat("soft ", l.soft, " and hard ", l.hard, " bytes must be soft <= hard <= the GPU's memory");
    case NVML_ERROR_NOT_SUPPORTED:
      return "this GPU has no per-cgroup memory limits: set enforcement: shim (or auto) for this node";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "the driver cannot use that cgroup: it must be a cgroup v2 directory (check cgroup-root)";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return text::cat("the driver has no per-cgroup memory limits (r", kMemoryLimitsDriverMajor,
                       "+): set enforcement: auto or shim");
    default:
      return "see the driver's messages (dmesg); enforcement: shim does without it";
  }
}

}  // namespace

Error limit_call_error(std::string_view call, const std::string& error_text, nvmlReturn_t code,
                       const std::string& gpu_uuid, const DriverLimit& l) {
  ErrorKind kind = code == NVML_ERROR_UNKNOWN || code == NVML_ERROR_GPU_IS_LOST ? ErrorKind::internal : ErrorKind::user;
  return Error{text::cat("driver memory limit of ", gpu_uuid, " on ", l.cgroup, ": ", call, ": ", error_text, "; ",
                         remedy(call, code, l)),
               0, kind};
}

Result<LimitDriver> LimitDriver::open(const Config& cfg) {
  if (uses_simulated_machine(cfg))
    return user_error(
        "driver memory limits need the NVML backend: a simulated machine file has no driver; set nvml: "
        "{backend: nvml} (tests use the fake libnvidia-ml.so.1) or enforcement: shim");
  auto lib = nvml::Library::open(cfg.nvml.library);
  if (!lib) return std::unexpected(lib.error());
  if (auto r = lib->init(); !r) return std::unexpected(r.error());
  return LimitDriver(std::make_unique<nvml::Library>(std::move(*lib)));
}

LimitDriver::~LimitDriver() {
  if (lib_) lib_->fn().nvmlShutdown();
}

Result<nvmlDevice_t> LimitDriver::device(const std::string& gpu_uuid) const {
  return lib_->device_by_uuid(gpu_uuid);
}

Result<bool> LimitDriver::call_set(nvmlDevice_t dev, const std::string& gpu_uuid, const DriverLimit& l,
                                   std::uint64_t soft, std::uint64_t hard) const {
  if (!available()) return false;
  nvmlSetMemoryLimits_v1_t arg{l.cgroup.c_str(), soft, hard};
  const nvmlReturn_t rc = lib_->fn().nvmlDeviceSetMemoryLimits_v1(dev, &arg);
  if (rc == NVML_SUCCESS) return true;
  if (rc == NVML_ERROR_FUNCTION_NOT_FOUND) return false;
  return std::unexpected(limit_call_error("nvmlDeviceSetMemoryLimits_v1", lib_->error_text(rc), rc, gpu_uuid,
                                          DriverLimit{l.cgroup, soft, hard}));
}

Result<bool> LimitDriver::set(const std::string& gpu_uuid, const DriverLimit& l) const {
  auto dev = device(gpu_uuid);
  if (!dev) return std::unexpected(dev.error());
  return call_set(*dev, gpu_uuid, l, l.soft, l.hard);
}

Result<> LimitDriver::clear(const std::string& gpu_uuid, const DriverLimit& l) const {
  auto dev = device(gpu_uuid);
  if (!dev) return std::unexpected(dev.error());
  for (auto [soft, hard] : {std::pair<std::uint64_t, std::uint64_t>{0, l.hard}, {0, NVML_DEVICE_MEMORY_LIMIT_MAX}}) {
    auto r = call_set(*dev, gpu_uuid, l, soft, hard);
    if (!r) return std::unexpected(r.error());
    if (!*r) return {};  // the call is gone: the driver holds nothing to clear
  }
  return {};
}

Result<std::optional<LimitReading>> LimitDriver::get(const std::string& gpu_uuid, const std::string& cgroup) const {
  if (!available()) return std::optional<LimitReading>();
  auto dev = device(gpu_uuid);
  if (!dev) return std::unexpected(dev.error());
  nvmlGetMemoryLimits_v1_t arg{cgroup.c_str(), 0, 0, 0};
  const nvmlReturn_t rc = lib_->fn().nvmlDeviceGetMemoryLimits_v1(*dev, &arg);
  if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_FUNCTION_NOT_FOUND) return std::optional<LimitReading>();
  if (rc != NVML_SUCCESS)
    return std::unexpected(limit_call_error("nvmlDeviceGetMemoryLimits_v1", lib_->error_text(rc), rc, gpu_uuid,
                                            DriverLimit{cgroup, 0, 0}));
  return std::optional<LimitReading>(LimitReading{arg.softLimit, arg.hardLimit, arg.currentUsed});
}

}  // namespace gpufrac
