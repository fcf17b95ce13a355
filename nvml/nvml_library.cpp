#include "nvml/nvml_library.hpp"

#include <dlfcn.h>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::nvml {

namespace {

constexpr const char* kMachineHint = "use --machine FILE for a simulated machine";

// dlerror() for a bare soname the loader could not find says "cannot open shared object file".
bool not_found(const std::string& path, const std::string& why) {
  if (path.find('/') != std::string::npos) return !fs::exists(path);
  return why.find("cannot open shared object file") != std::string::npos;
}

// Library-provided text in a one-line message: printable ASCII only, bounded.
std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (unsigned char c : s.substr(0, max)) out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  return out;
}

template <class Fn>
void resolve(void* handle, const char* name, Fn& target) {
  target = reinterpret_cast<Fn>(::dlsym(handle, name));
}

}  // namespace

void Library::Closer::operator()(void* handle) const {
  ::dlclose(handle);
}

Result<Library> Library::open(const std::string& path) {
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = ::dlerror();
    std::string why = err ? err : "unknown dlopen error";
    if (not_found(path, why))
      return internal_error(text::cat("NVIDIA driver library ", path,
                                      " was not found (is the NVIDIA driver installed?); ", kMachineHint));
    return internal_error(text::cat("NVIDIA driver library ", path, " could not be loaded: ", printable(why, 200),
                                    "; reinstall the driver or ", kMachineHint));
  }
  Library lib;
  lib.handle_.reset(handle);
  lib.path_ = path;
#define GPUFRAC_NVML_RESOLVE(name) resolve(handle, #name, lib.fn_.name);
  GPUFRAC_NVML_REQUIRED(GPUFRAC_NVML_RESOLVE)
  GPUFRAC_NVML_OPTIONAL(GPUFRAC_NVML_RESOLVE)
  GPUFRAC_NVML_MIG(GPUFRAC_NVML_RESOLVE)
  GPUFRAC_NVML_MIG_CHANGE(GPUFRAC_NVML_RESOLVE)
  GPUFRAC_NVML_MEMORY_LIMITS(GPUFRAC_NVML_RESOLVE)
  GPUFRAC_NVML_TOPOLOGY(GPUFRAC_NVML_RESOLVE)
  GPUFRAC_NVML_COMPUTE_MODE(GPUFRAC_NVML_RESOLVE)
#undef GPUFRAC_NVML_RESOLVE
#define GPUFRAC_NVML_NEED(name)                                                       \
  if (!lib.fn_.name)                                                                  \
    return internal_error(text::cat("NVIDIA driver library ", path, " lacks ", #name, \
                                    ", which gpufrac needs (driver too old or not an NVML library); ", kMachineHint));
  GPUFRAC_NVML_REQUIRED(GPUFRAC_NVML_NEED)
#undef GPUFRAC_NVML_NEED
#define GPUFRAC_NVML_FIRST_MISSING(name) \
  if (lib.missing_mig_.empty() && !lib.fn_.name) lib.missing_mig_ = #name;
  GPUFRAC_NVML_MIG(GPUFRAC_NVML_FIRST_MISSING)
#undef GPUFRAC_NVML_FIRST_MISSING
#define GPUFRAC_NVML_FIRST_MISSING(name) \
  if (lib.missing_mig_change_.empty() && !lib.fn_.name) lib.missing_mig_change_ = #name;
  GPUFRAC_NVML_MIG_CHANGE(GPUFRAC_NVML_FIRST_MISSING)
#undef GPUFRAC_NVML_FIRST_MISSING
  return lib;
}

std::string Library::error_text(nvmlReturn_t code) const {
  const char* s = fn_.nvmlErrorString ? fn_.nvmlErrorString(code) : nullptr;
  return text::cat(s ? printable(s, 80) : std::string("NVML error"), " (", code, ")");
}

Result<> Library::check(nvmlReturn_t code, std::string_view call) const {
  if (code == NVML_SUCCESS) return {};
  return internal_error(text::cat(call, ": ", error_text(code)));
}

Result<> Library::init() const {
  nvmlReturn_t r = fn_.nvmlInit_v2();
  if (r == NVML_SUCCESS) return {};
  std::string todo = r == NVML_ERROR_NO_PERMISSION
                         ? "run as root or grant access to /dev/nvidiactl"
                         : "check that the NVIDIA kernel module is loaded (nvidia-smi should work)";
  return internal_error(text::cat("NVML could not be initialised through ", path_, ": ", error_text(r), "; ", todo,
                                  ", or ", kMachineHint));
}

Result<nvmlDevice_t> Library::device_by_uuid(const std::string& gpu_uuid) const {
  unsigned int count = 0;
  if (auto r = check(fn_.nvmlDeviceGetCount_v2(&count), "nvmlDeviceGetCount_v2"); !r) return std::unexpected(r.error());
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (fn_.nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS) continue;
    if (fn_.nvmlDeviceGetUUID(dev, uuid, sizeof uuid) == NVML_SUCCESS && gpu_uuid == uuid) return dev;
  }
  return internal_error(gpu_uuid + ": the driver lists no such GPU; run gpufrac info --refresh");
}

std::string Library::missing_mig_symbol() const {
  return missing_mig_;
}

std::string Library::missing_mig_change_symbol() const {
  return missing_mig_change_;
}

std::size_t nvml_process_info_size(std::string_view driver_version) {
  auto parts = text::split(driver_version, '.');
  if (parts.size() < 2) return sizeof(nvmlProcessInfo_t);
  auto major = text::parse_u64(parts[0]);
  auto minor = text::parse_u64(parts[1]);
  if (major && minor && *major == 535 && *minor >= 43 && *minor < 98) return sizeof(nvmlProcessInfo_535_43_t);
  return sizeof(nvmlProcessInfo_t);
}

}  // namespace gpufrac::nvml
