#include "reclaim/swap_budget.hpp"

#include <string_view>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::reclaim {

namespace {

std::optional<std::uint64_t> read_u64(const std::string& path) {
  auto t = fs::read_file(path, 64);
  if (!t) return std::nullopt;
  std::string_view v(*t);
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
  auto n = text::parse_u64(v);
  return n ? std::optional<std::uint64_t>(*n) : std::nullopt;  // "max": no limit
}

// The cgroup directory of pid's memory controller and its two files (limit, usage).
struct MemoryFiles {
  std::string dir, limit, usage;
};

std::optional<MemoryFiles> memory_files(const std::string& proc_root, const std::string& cgroup_root,
                                        std::int64_t pid) {
  auto text = fs::read_file(text::cat(proc_root, "/", pid, "/cgroup"), 64u << 10);
  if (!text) return std::nullopt;
  std::optional<MemoryFiles> v2;
  for (std::string_view rest(*text); !rest.empty();) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const auto a = line.find(':'), b = line.find(':', a == std::string_view::npos ? 0 : a + 1);
    if (a == std::string_view::npos || b == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers == "memory")  // v1 (a hybrid host's memory controller is there)
      return MemoryFiles{text::cat(cgroup_root, "/memory", path), "memory.limit_in_bytes", "memory.usage_in_bytes"};
    if (line.substr(0, a) == "0" && controllers.empty())
      v2 = MemoryFiles{text::cat(cgroup_root, path), "memory.max", "memory.current"};
  }
  return v2;
}

}  // namespace

std::optional<std::uint64_t> cgroup_room(const std::string& proc_root, const std::string& cgroup_root,
                                         std::int64_t pid) {
  auto files = memory_files(proc_root, cgroup_root, pid);
  if (!files) return std::nullopt;
  auto limit = read_u64(files->dir + "/" + files->limit);
  if (!limit || *limit >= (1ull << 62)) return std::nullopt;  // v1 writes "no limit" as a huge number
  const std::uint64_t usage = read_u64(files->dir + "/" + files->usage).value_or(0);
  return *limit > usage ? *limit - usage : 0;
}

std::string swap_room_problem(std::uint64_t bytes, std::optional<std::uint64_t> room, std::uint64_t budget,
                              std::uint64_t swapped) {
  if (room && *room < bytes)
    return text::cat("its memory cgroup has ", text::format_bytes(*room), " of room and the swap needs ",
                     text::format_bytes(bytes), " of host memory (a checkpoint is charged to the process's cgroup)");
  if (budget == 0) return "";
  const std::uint64_t left = budget > swapped ? budget - swapped : 0;
  if (left < bytes)
    return text::cat("the node's swap budget (swap.host-memory: ", text::format_bytes(budget), ") has ",
                     text::format_bytes(left), " left and the swap needs ", text::format_bytes(bytes));
  return "";
}

}  // namespace gpufrac::reclaim
