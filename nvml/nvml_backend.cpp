// The real backend: driver version and, per GPU, identity, memory, compute capability and MIG
// state (nvml_mig.cpp), read through the dlopen'ed library between nvmlInit_v2 and nvmlShutdown.
#include "nvml/nvml_backend.hpp"

#include "core/text.hpp"
#include "nvml/inventory_order.hpp"
#include "nvml/nvml_detail.hpp"
#include "nvml/nvml_library.hpp"

namespace gpufrac {

namespace {

using nvml::Library;

// A string out-parameter: the call's buffer, always NUL-terminated afterwards.
template <class Call>
Result<std::string> read_string(const Library& lib, std::string_view what, unsigned int size, Call call) {
  std::string buf(size, '\0');
  if (auto r = lib.check(call(buf.data(), size), what); !r) return std::unexpected(r.error());
  buf.back() = '\0';
  buf.resize(std::char_traits<char>::length(buf.c_str()));
  return buf;
}

// nvmlDeviceGetMemoryInfo_v2 (version 0x02000028) where the driver has it, else the v1 call.
Result<std::uint64_t> read_memory_total(const Library& lib, nvmlDevice_t dev) {
  if (lib.fn().nvmlDeviceGetMemoryInfo_v2) {
    nvmlMemory_v2_t mem{};
    mem.version = nvmlMemory_v2;
    nvmlReturn_t r = lib.fn().nvmlDeviceGetMemoryInfo_v2(dev, &mem);
    if (r == NVML_SUCCESS) return mem.total;
    if (r != NVML_ERROR_FUNCTION_NOT_FOUND && r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
      return std::unexpected(lib.check(r, "nvmlDeviceGetMemoryInfo_v2").error());
  }
  nvmlMemory_t mem{};
  if (auto r = lib.check(lib.fn().nvmlDeviceGetMemoryInfo(dev, &mem), "nvmlDeviceGetMemoryInfo"); !r)
    return std::unexpected(r.error());
  return mem.total;
}

Result<> read_identity(const Library& lib, nvmlDevice_t dev, Gpu& g) {
  const auto& fn = lib.fn();
  if (auto r = lib.check(fn.nvmlDeviceGetIndex(dev, &g.index), "nvmlDeviceGetIndex"); !r) return r;
  auto uuid = read_string(lib, "nvmlDeviceGetUUID", NVML_DEVICE_UUID_V2_BUFFER_SIZE,
                          [&](char* b, unsigned n) { return fn.nvmlDeviceGetUUID(dev, b, n); });
  if (!uuid) return std::unexpected(uuid.error());
  g.uuid = std::move(*uuid);
  auto name = read_string(lib, "nvmlDeviceGetName", NVML_DEVICE_NAME_V2_BUFFER_SIZE,
                          [&](char* b, unsigned n) { return fn.nvmlDeviceGetName(dev, b, n); });
  if (!name) return std::unexpected(name.error());
  g.name = std::move(*name);
  nvmlPciInfo_t pci{};
  if (auto r = lib.check(fn.nvmlDeviceGetPciInfo_v3(dev, &pci), "nvmlDeviceGetPciInfo_v3"); !r) return r;
  pci.busId[sizeof pci.busId - 1] = '\0';
  g.pci_bus_id = pci.busId;
  return lib.check(fn.nvmlDeviceGetMinorNumber(dev, &g.minor), "nvmlDeviceGetMinorNumber");
}

// Whether the driver sets per-cgroup memory limits on the GPU: the library exports the calls, and a
// get answers with anything but FUNCTION_NOT_FOUND (NVML's code for a call its driver lacks; the
// empty nameSpace names no cgroup, so nothing is read or changed).
bool memory_limits(const Library& lib, nvmlDevice_t dev) {
  if (!lib.has_memory_limits()) return false;
  nvmlGetMemoryLimits_v1_t probe{};
  probe.nameSpace = "";
  return lib.fn().nvmlDeviceGetMemoryLimits_v1(dev, &probe) != NVML_ERROR_FUNCTION_NOT_FOUND;
}

Result<Gpu> read_gpu(const Library& lib, unsigned int index) {
  const auto& fn = lib.fn();
  nvmlDevice_t dev = nullptr;
  if (auto r = lib.check(fn.nvmlDeviceGetHandleByIndex_v2(index, &dev), "nvmlDeviceGetHandleByIndex_v2"); !r)
    return std::unexpected(r.error());
  Gpu g;
  if (auto r = read_identity(lib, dev, g); !r) return std::unexpected(r.error());
  auto total = read_memory_total(lib, dev);
  if (!total) return std::unexpected(total.error());
  g.memory_bytes = *total;
  if (auto r = lib.check(fn.nvmlDeviceGetCudaComputeCapability(dev, &g.cc_major, &g.cc_minor),
                         "nvmlDeviceGetCudaComputeCapability");
      !r)
    return std::unexpected(r.error());
  if (auto r = nvml::read_mig(lib, dev, g); !r) return std::unexpected(r.error());
  g.memory_limits = memory_limits(lib, dev);
  canonical_order(g);
  return g;
}

Result<Inventory> read_inventory(const Library& lib) {
  Inventory inv;
  inv.source = "nvml:" + lib.path();
  auto version = read_string(lib, "nvmlSystemGetDriverVersion", NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE,
                             [&](char* b, unsigned n) { return lib.fn().nvmlSystemGetDriverVersion(b, n); });
  if (!version) return std::unexpected(version.error());
  inv.driver_version = std::move(*version);
  unsigned int count = 0;
  if (auto r = lib.check(lib.fn().nvmlDeviceGetCount_v2(&count), "nvmlDeviceGetCount_v2"); !r)
    return std::unexpected(r.error());
  std::vector<nvmlDevice_t> devices;
  for (unsigned int i = 0; i < count; ++i) {
    auto g = read_gpu(lib, i);
    if (!g) return std::unexpected(std::move(g.error().wrap(text::cat("GPU ", i))));
    inv.gpus.push_back(std::move(*g));
    devices.emplace_back();
    if (auto r = lib.check(lib.fn().nvmlDeviceGetHandleByIndex_v2(i, &devices.back()), "nvmlDeviceGetHandleByIndex_v2");
        !r)
      return std::unexpected(r.error());
  }
  nvml::read_topology(lib, devices, inv.gpus);
  return inv;
}

}  // namespace

Result<Inventory> discover_nvml(const std::string& library) {
  auto lib = Library::open(library);
  if (!lib) return std::unexpected(lib.error());
  if (auto r = lib->init(); !r) return std::unexpected(r.error());
  auto inv = read_inventory(*lib);
  lib->fn().nvmlShutdown();
  if (!inv) return std::unexpected(std::move(inv.error().wrap("NVML discovery through " + library)));
  return inv;
}

}  // namespace gpufrac
