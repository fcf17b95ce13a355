#include "fake_processes.hpp"

#include <dirent.h>

#include <algorithm>
#include <sstream>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "fake_pidns.hpp"

namespace gpufrac::fake_nvml {

namespace {

// Field 22 of /proc/<pid>/stat, or 0 when the process is gone or a zombie.
std::uint64_t live_start(const std::string& pid) {
  auto stat = fs::read_file("/proc/" + pid + "/stat", 4096);
  if (!stat) return 0;
  const auto close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return 0;
  std::istringstream rest(stat->substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 3 && (field == "Z" || field == "X")) return 0;
    if (i == 22) return text::parse_u64(field).value_or(0);
  }
  return 0;
}

// What one usage file says the process holds on the GPU, when the process is the one that wrote it.
std::uint64_t held(const std::string& file, const std::string& pid, const std::string& gpu_uuid) {
  auto text = fs::read_file(file, 64u << 10);
  if (!text) return 0;
  std::istringstream in(*text);
  std::string key, value, uuid, start;
  std::uint64_t used = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    l >> key;
    if (key == "start") l >> start;
    if (key == "used" && l >> uuid >> value && uuid == gpu_uuid) used = text::parse_u64(value).value_or(0);
  }
  return used != 0 && text::cat(live_start(pid)) == start ? used : 0;
}

}  // namespace

std::vector<GpuProcess> gpu_processes(const State& state, const std::string& gpu_uuid) {
  std::vector<GpuProcess> out;
  if (state.state_file.empty()) return out;
  const std::string dir = state.state_file + ".usage";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string entry = e->d_name;
    const auto pid = host_pid_of(entry);  // a process of a container's own PID namespace: its host pid
    if (!pid) continue;
    if (std::uint64_t used = held(dir + "/" + entry, *pid, gpu_uuid); used != 0)
      out.push_back({static_cast<unsigned int>(*text::parse_u64(*pid)), used});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const GpuProcess& a, const GpuProcess& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace gpufrac::fake_nvml
