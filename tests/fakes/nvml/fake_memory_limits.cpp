#include "fake_memory_limits.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "fake_pidns.hpp"

namespace gpufrac::fake_nvml {

namespace {

std::string cgroup_root() {
  const char* env = std::getenv(kCgroupRootEnv);
  std::string root = env && *env ? env : "/sys/fs/cgroup";
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

std::string limits_path(const State& s) {
  return s.state_file + ".limits";
}
std::string usage_dir(const State& s) {
  return s.state_file + ".usage";
}

// Field 22 of /proc/<pid>/stat, or nullopt when the process is gone.
std::optional<std::uint64_t> start_time(const std::string& pid) {
  auto stat = fs::read_file("/proc/" + pid + "/stat", 4096);
  if (!stat) return std::nullopt;
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat->substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return text::parse_u64(field);
  return std::nullopt;
}

// One process's usage file: its bytes on the GPU when it is alive and in `cgroup`, else 0.
std::uint64_t process_used(const std::string& file, const std::string& pid, const std::string& cgroup,
                           const std::string& gpu_uuid) {
  auto text = fs::read_file(file, 64u << 10);
  if (!text) return 0;
  std::istringstream in(*text);
  std::string key, value, uuid, start, group;
  std::uint64_t used = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    l >> key;
    if (key == "start") l >> start;
    if (key == "cgroup") std::getline(l >> std::ws, group);
    if (key == "used" && l >> uuid >> value && uuid == gpu_uuid) used = text::parse_u64(value).value_or(0);
  }
  const auto live = start_time(pid);
  return group == cgroup && live && text::cat(*live) == start ? used : 0;
}

}  // namespace

std::optional<std::string> cgroup_of_namespace(const char* name_space) {
  if (!name_space) return std::nullopt;
  const std::string root = cgroup_root(), ns = name_space;
  if (ns != root && !ns.starts_with(root + "/")) return std::nullopt;
  if (ns.find("/../") != std::string::npos || ns.ends_with("/..")) return std::nullopt;
  struct stat st {};
  if (::stat(ns.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  std::string cgroup = ns.substr(root.size());
  while (cgroup.size() > 1 && cgroup.back() == '/') cgroup.pop_back();
  return cgroup.empty() ? "/" : cgroup;
}

Result<std::vector<MemoryLimit>> load_memory_limits(const State& state) {
  if (state.state_file.empty()) return state.memory_limits;
  if (!fs::exists(limits_path(state))) return std::vector<MemoryLimit>{};
  auto text = fs::read_file(limits_path(state), 1u << 20);
  if (!text) return std::unexpected(text.error());
  std::vector<MemoryLimit> out;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    MemoryLimit m;
    if (!(l >> m.gpu_uuid >> m.soft >> m.hard) || !std::getline(l >> std::ws, m.cgroup))
      return internal_error(limits_path(state) + ": not a line \"<uuid> <soft> <hard> <cgroup>\": " + line);
    out.push_back(std::move(m));
  }
  return out;
}

Result<> save_memory_limits(State& state, const std::vector<MemoryLimit>& limits) {
  if (state.state_file.empty()) {
    state.memory_limits = limits;
    return {};
  }
  std::string text;
  for (const auto& m : limits) text += text::cat(m.gpu_uuid, " ", m.soft, " ", m.hard, " ", m.cgroup, "\n");
  return fs::write_file_atomic(limits_path(state), text, 0644);
}

std::uint64_t cgroup_used(const State& state, const std::string& cgroup, const std::string& gpu_uuid) {
  if (state.state_file.empty()) return 0;
  DIR* dir = ::opendir(usage_dir(state).c_str());
  if (!dir) return 0;
  std::uint64_t sum = 0;
  while (const dirent* d = ::readdir(dir)) {
    const std::string entry = d->d_name;
    const auto pid = host_pid_of(entry);
    if (!pid) continue;
    sum += process_used(usage_dir(state) + "/" + entry, *pid, cgroup, gpu_uuid);
  }
  ::closedir(dir);
  return sum;
}

std::optional<MemoryLimit> own_limit(const State& state, const std::string& gpu_uuid) {
  auto text = fs::read_file("/proc/self/cgroup", 64u << 10);
  if (!text) return std::nullopt;
  std::string cgroup;
  for (const auto& line : text::split(*text, '\n'))
    if (line.starts_with("0::")) cgroup = line.substr(3);
  auto limits = load_memory_limits(state);
  if (cgroup.empty() || !limits) return std::nullopt;
  for (const auto& m : *limits)
    if (m.gpu_uuid == gpu_uuid && m.cgroup == cgroup) return m;
  return std::nullopt;
}

nvmlReturn_t injected_code(const char* function) {
  const char* list = std::getenv("GPUFRAC_FAKE_NVML_FAIL");
  if (!list) return NVML_SUCCESS;
  const std::string name = function;
  for (const auto& item : text::split(list, ',')) {
    if (item == name) return NVML_ERROR_UNKNOWN;
    if (item.starts_with(name + ":"))
      if (auto code = text::parse_u64(item.substr(name.size() + 1)); code && *code < 100000)
        return static_cast<nvmlReturn_t>(*code);
  }
  return NVML_SUCCESS;
}

}  // namespace gpufrac::fake_nvml
