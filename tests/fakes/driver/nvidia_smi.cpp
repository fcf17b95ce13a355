// A fake nvidia-smi for simulated driver trees: the device table of the real one (name, bus id,
// memory used / total) from whatever libnvidia-ml.so.1 the loader finds, so a container shows what
// NVML tells it (its share's limit, through the memory-limit shim). Also
// `--query-gpu=name,uuid,memory.total,memory.used,memory.free --format=csv[,noheader][,nounits]`.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nvml/nvml_api.hpp"

namespace {

struct Row {
  std::string name, uuid, bus;
  unsigned long long total = 0, used = 0, free = 0;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + 1)
    out.push_back(s.substr(start, at - start));
  out.push_back(s.substr(start));
  return out;
}

int fail(const char* what, nvmlReturn_t rc) {
  std::fprintf(stderr, "%s: %s\n", what, nvmlErrorString(rc));
  return rc == NVML_ERROR_DRIVER_NOT_LOADED ? 9 : 15;
}

std::string mib(unsigned long long bytes, bool units) {
  return std::to_string(bytes >> 20) + (units ? " MiB" : "");
}

int print_query(const std::vector<Row>& rows, const std::string& fields, const std::string& format) {
  const auto opts = split(format, ',');
  const bool header = std::find(opts.begin(), opts.end(), "noheader") == opts.end();
  const bool units = std::find(opts.begin(), opts.end(), "nounits") == opts.end();
  const auto names = split(fields, ',');
  std::string line;
  for (const auto& n : names)
    line += (line.empty() ? "" : ", ") + n + (units && n.starts_with("memory.") ? " [MiB]" : "");
  if (header) std::printf("%s\n", line.c_str());
  for (const Row& r : rows) {
    line.clear();
    for (const auto& n : names) {
      std::string v = n == "name"           ? r.name
                      : n == "uuid"         ? r.uuid
                      : n == "memory.total" ? mib(r.total, units)
                      : n == "memory.used"  ? mib(r.used, units)
                      : n == "memory.free"  ? mib(r.free, units)
                                            : std::string();
      if (v.empty()) {
        std::fprintf(stderr, "Field \"%s\" is not a valid field to query.\n", n.c_str());
        return 2;
      }
      line += (line.empty() ? "" : ", ") + v;
    }
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

void print_table(const std::vector<Row>& rows, const char* driver) {
  const char* bar = "+-----------------------------------------+------------------------+----------------------+";
  std::printf("+-----------------------------------------------------------------------------------------+\n");
  std::printf("| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: 12.4     |\n", driver, driver);
  std::printf("|-----------------------------------------+------------------------+----------------------+\n");
  std::printf("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n");
  std::printf("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n");
  std::printf("|=========================================+========================+======================|\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::printf("| %3zu  %-26.26s      On | %18s Off | %20s |\n", i, r.name.c_str(), r.bus.c_str(), "0");
    std::printf("| N/A   32C    P0             43W /  400W | %7lluMiB / %6lluMiB | %6s      Default |\n", r.used >> 20,
                r.total >> 20, "0%");
    std::printf("%s\n", bar);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string query, format = "csv";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--query-gpu=", 12) == 0) query = argv[i] + 12;
    if (std::strncmp(argv[i], "--format=", 9) == 0) format = argv[i] + 9;
  }
  if (nvmlReturn_t rc = nvmlInit_v2(); rc != NVML_SUCCESS)
    return fail("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", rc);
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
  nvmlSystemGetDriverVersion(driver, sizeof driver);
  unsigned int count = 0;
  if (nvmlReturn_t rc = nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS) return fail("nvmlDeviceGetCount", rc);
  if (count == 0) {
    std::printf("No devices were found\n");
    return 6;
  }
  std::vector<Row> rows;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    Row r;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    nvmlPciInfo_t pci{};
    nvmlMemory_t mem{};
    if (nvmlReturn_t rc = nvmlDeviceGetHandleByIndex_v2(i, &dev); rc != NVML_SUCCESS)
      return fail("nvmlDeviceGetHandleByIndex", rc);
    nvmlDeviceGetName(dev, name, sizeof name);
    nvmlDeviceGetUUID(dev, uuid, sizeof uuid);
    nvmlDeviceGetPciInfo_v3(dev, &pci);
    if (nvmlReturn_t rc = nvmlDeviceGetMemoryInfo(dev, &mem); rc != NVML_SUCCESS)
      return fail("nvmlDeviceGetMemoryInfo", rc);
    rows.push_back({name, uuid, pci.busId, mem.total, mem.used, mem.free});
  }
  nvmlShutdown();
  if (!query.empty()) return print_query(rows, query, format);
  print_table(rows, driver);
  return 0;
}
