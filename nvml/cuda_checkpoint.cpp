#include "nvml/cuda_checkpoint.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdint>

#include "core/text.hpp"

namespace gpufrac::nvml {

namespace {

// The driver API's types, as NVIDIA's cuda.h (12.8+) lays them out: every args struct is 64 bytes,
// its reserved fields zero (a null pointer is allowed for args; only the lock's has a field).
using CUresult = int;
constexpr CUresult kSuccess = 0, kOutOfMemory = 2, kNotInitialized = 3, kIllegalState = 401, kNotSupported = 801,
                   kTimeout = 909;
struct LockArgs {
  unsigned timeout_ms = 0;
  unsigned reserved0 = 0;
  std::array<std::uint64_t, 7> reserved1{};
};
static_assert(sizeof(LockArgs) == 64);

std::string printable(const char* s) {
  std::string out;
  for (const char* p = s; p && *p && out.size() < 120; ++p) out.push_back(*p >= 0x20 && *p < 0x7f ? *p : '?');
  return out;
}

}  // namespace

struct CheckpointDriver::Api {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;
  CUresult (*get_state)(int, int*) = nullptr;
  CUresult (*get_tid)(int, int*) = nullptr;
  CUresult (*lock)(int, LockArgs*) = nullptr;
  CUresult (*checkpoint)(int, void*) = nullptr;
  CUresult (*restore)(int, void*) = nullptr;
  CUresult (*unlock)(int, void*) = nullptr;

  // "CUDA_ERROR_ILLEGAL_STATE (the operation is not permitted in the current state)".
  std::string describe(CUresult rc) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (error_name) error_name(rc, &name);
    if (error_string) error_string(rc, &text);
    std::string out = name ? printable(name) : text::cat("CUresult ", rc);
    return text ? text::cat(out, " (", printable(text), ")") : out;
  }
};

namespace {

template <class Fn>
void resolve(void* handle, const char* name, Fn& target) {
  target = reinterpret_cast<Fn>(::dlsym(handle, name));
}

// What each call needs, for its error message.
struct Call {
  const char* name;
  const char* needs;  // the state the call needs
};
constexpr Call kLock{"cuCheckpointProcessLock", "RUNNING"};
constexpr Call kCheckpoint{"cuCheckpointProcessCheckpoint", "LOCKED"};
constexpr Call kRestore{"cuCheckpointProcessRestore", "CHECKPOINTED"};
constexpr Call kUnlock{"cuCheckpointProcessUnlock", "LOCKED"};

}  // namespace

void CheckpointDriver::Closer::operator()(void* handle) const {
  ::dlclose(handle);
}

std::string_view state_name(ProcessState state) {
  switch (state) {
    case ProcessState::running:
      return "RUNNING";
    case ProcessState::locked:
      return "LOCKED";
    case ProcessState::checkpointed:
      return "CHECKPOINTED";
    case ProcessState::failed:
      return "FAILED";
  }
  return "UNKNOWN";
}

Result<CheckpointDriver> CheckpointDriver::open(const std::string& path) {
  ::dlerror();
  // RTLD_NODELETE: the driver runs threads of its own (its checkpoint thread); it is never unloaded.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char* err = ::dlerror();
    return internal_error(text::cat("CUDA driver library ", path, " could not be loaded: ", printable(err),
                                    "; swap needs libcuda.so.1 of the NVIDIA driver (r570 or newer)"));
  }
  CheckpointDriver d;
  d.handle_.reset(handle);
  d.path_ = path;
  auto api = std::make_shared<Api>();
  resolve(handle, "cuInit", api->init);
  resolve(handle, "cuGetErrorName", api->error_name);
  resolve(handle, "cuGetErrorString", api->error_string);
  resolve(handle, "cuCheckpointProcessGetState", api->get_state);
  resolve(handle, "cuCheckpointProcessGetRestoreThreadId", api->get_tid);
  resolve(handle, "cuCheckpointProcessLock", api->lock);
  resolve(handle, "cuCheckpointProcessCheckpoint", api->checkpoint);
  resolve(handle, "cuCheckpointProcessRestore", api->restore);
  resolve(handle, "cuCheckpointProcessUnlock", api->unlock);
  if (!api->init) return internal_error(text::cat("CUDA driver library ", path, " lacks cuInit; not a CUDA driver"));
  if (!api->get_state || !api->lock || !api->checkpoint || !api->restore || !api->unlock)
    return user_error(text::cat("CUDA driver library ", path,
                                " has no checkpoint API (cuCheckpointProcessLock and the rest); swap needs driver "
                                "r570 / CUDA 12.8 or newer"));
  if (const CUresult rc = api->init(0); rc != kSuccess)
    return internal_error(text::cat("cuInit: ", api->describe(rc), "; the caller must be able to use the GPU"));
  d.api_ = std::move(api);
  return d;
}

Result<ProcessState> CheckpointDriver::state(int pid) const {
  int s = 0;
  const CUresult rc = api_->get_state(pid, &s);
  if (rc == kNotInitialized) return user_error(text::cat("pid ", pid, ": the process has no CUDA state"));
  if (rc != kSuccess)
    return internal_error(text::cat("cuCheckpointProcessGetState(pid ", pid, "): ", api_->describe(rc)));
  if (s < 0 || s > 3)
    return internal_error(text::cat("cuCheckpointProcessGetState(pid ", pid, "): state ", s,
                                    " is none of RUNNING, LOCKED, CHECKPOINTED, FAILED"));
  return static_cast<ProcessState>(s);
}

namespace {

// The one-line error of a failed call.
std::unexpected<Error> call_error(const CheckpointDriver& d, const CheckpointDriver::Api& api, const Call& call,
                                  int pid, CUresult rc) {
  const std::string head = text::cat(call.name, "(pid ", pid, "): ", api.describe(rc));
  if (rc == kIllegalState) {
    auto now = d.state(pid);
    return user_error(text::cat(head, "; it needs a ", call.needs, " process, this one is ",
                                now ? std::string(state_name(*now)) : std::string("in an unknown state")));
  }
  if (rc == kNotInitialized) return user_error(text::cat(head, "; the process has no CUDA state (or has exited)"));
  if (rc == kOutOfMemory)
    return user_error(text::cat(head,
                                "; the GPU lacks the memory the process held: it stays CHECKPOINTED until "
                                "that memory is free"));
  if (rc == kTimeout)
    return user_error(text::cat(head, "; its submitted work outlasted the lock's timeout: it stays RUNNING"));
  if (rc == kNotSupported)
    return user_error(text::cat(head,
                                "; the driver cannot checkpoint this process (MPS, MIG, managed memory or "
                                "another unsupported feature)"));
  return internal_error(head);
}

}  // namespace

Result<> CheckpointDriver::lock(int pid, std::chrono::milliseconds timeout) const {
  LockArgs args;
  args.timeout_ms = static_cast<unsigned>(timeout.count() < 0 ? 0 : timeout.count());
  const CUresult rc = api_->lock(pid, &args);
  if (rc != kSuccess) return call_error(*this, *api_, kLock, pid, rc);
  return {};
}

Result<> CheckpointDriver::checkpoint(int pid) const {
  const CUresult rc = api_->checkpoint(pid, nullptr);
  if (rc != kSuccess) return call_error(*this, *api_, kCheckpoint, pid, rc);
  return {};
}

Result<> CheckpointDriver::restore(int pid) const {
  const CUresult rc = api_->restore(pid, nullptr);
  if (rc != kSuccess) return call_error(*this, *api_, kRestore, pid, rc);
  return {};
}

Result<> CheckpointDriver::unlock(int pid) const {
  const CUresult rc = api_->unlock(pid, nullptr);
  if (rc != kSuccess) return call_error(*this, *api_, kUnlock, pid, rc);
  return {};
}

Result<int> CheckpointDriver::restore_thread(int pid) const {
  int tid = 0;
  if (!api_->get_tid) return user_error(text::cat(path_, " lacks cuCheckpointProcessGetRestoreThreadId"));
  const CUresult rc = api_->get_tid(pid, &tid);
  if (rc != kSuccess)
    return internal_error(text::cat("cuCheckpointProcessGetRestoreThreadId(pid ", pid, "): ", api_->describe(rc)));
  return tid;
}

}  // namespace gpufrac::nvml
