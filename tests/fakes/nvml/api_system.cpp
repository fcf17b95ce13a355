// Library-wide calls: init and shutdown (reference counted; the machine file, and the shared state
// file of GPUFRAC_FAKE_NVML_STATE when set, are read when the count goes from 0 to 1), error
// strings, driver version, device count and handle lookup.
#include <cstdio>
#include <cstdlib>

#include "fake_entry.hpp"

namespace gpufrac::fake_nvml {

Global& global() {
  static Global g;
  return g;
}

namespace {

constexpr const char* kMachineEnv = "GPUFRAC_FAKE_NVML_MACHINE";

nvmlReturn_t init() noexcept {
  try {
    Global& g = global();
    std::lock_guard lock(g.mutex);
    if (g.refs > 0) {
      ++g.refs;
      return NVML_SUCCESS;
    }
    const char* file = std::getenv(kMachineEnv);
    auto embedded = embedded_machine();
    if (!embedded) {
      std::fprintf(stderr, "fake libnvidia-ml.so.1: %s\n", embedded.error().message.c_str());
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    if ((!file || !*file) && !*embedded) {
      std::fprintf(stderr, "fake libnvidia-ml.so.1: %s is not set (it names the machine file)\n", kMachineEnv);
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    auto state = file && *file ? load_state(file) : state_of(**embedded);
    if (!state) {
      std::fprintf(stderr, "fake libnvidia-ml.so.1: %s\n", state.error().message.c_str());
      return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    if (const char* path = std::getenv(kStateEnv); path && *path)
      if (auto r = attach_state_file(**state, path); !r) {
        std::fprintf(stderr, "fake libnvidia-ml.so.1: %s\n", r.error().message.c_str());
        return NVML_ERROR_DRIVER_NOT_LOADED;
      }
    g.state = std::move(*state);
    g.refs = 1;
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

}  // namespace

}  // namespace gpufrac::fake_nvml

using namespace gpufrac::fake_nvml;

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit(void) {
  return init();
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return init();
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) {
  return init();
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  try {
    Global& g = global();
    std::lock_guard lock(g.mutex);
    if (g.refs == 0) return NVML_ERROR_UNINITIALIZED;
    if (--g.refs == 0) g.state.reset();
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "OS call failed or operation not supported on this OS";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_IN_USE:
      return "GPU is currently in use";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient Resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return with_state([&](State& s) -> nvmlReturn_t { return copy_string(s.driver_version, version, length); });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return with_state([&](State& s) -> nvmlReturn_t {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = static_cast<unsigned int>(s.gpus.size());
    return NVML_SUCCESS;
  });
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return with_state([&](State& s) -> nvmlReturn_t {
    if (!device || index >= s.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &s.gpus[index]->handle;
    return NVML_SUCCESS;
  });
}

// GPU-<uuid> or, as NVML does since R470, MIG-<uuid> (a MIG device handle).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return with_state([&](State& s) -> nvmlReturn_t {
    if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
    for (auto& gpu : s.gpus) {
      if (gpu->model.uuid == uuid) {
        *device = &gpu->handle;
        return NVML_SUCCESS;
      }
      for (auto* ci : gpu->mig.slots)
        if (ci && ci->uuid == uuid) {
          *device = &ci->device;
          return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}
