#include "core/enforcement/cgroup_v2.hpp"

#include "core/fs.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

std::string trimmed(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root == "/" ? "" : root;
}

}  // namespace

const char* to_string(CgroupLayout l) {
  switch (l) {
    case CgroupLayout::v2:
      return "cgroup v2";
    case CgroupLayout::hybrid:
      return "hybrid cgroup v1/v2";
    case CgroupLayout::v1:
      break;
  }
  return "cgroup v1";
}

CgroupLayout detect_cgroup_layout(const std::string& cgroup_root) {
  if (fs::exists(cgroup_root + "/cgroup.controllers")) return CgroupLayout::v2;
  if (fs::exists(cgroup_root + "/unified/cgroup.controllers")) return CgroupLayout::hybrid;
  return CgroupLayout::v1;
}

Result<std::string> process_cgroup_dir(const std::string& proc_root, const std::string& cgroup_root, pid_t pid) {
  const std::string file = text::cat(proc_root, "/", pid, "/cgroup");
  auto content = fs::read_file(file, 1u << 20);
  if (!content) return std::unexpected(content.error());
  for (const auto& line : text::split(*content, '\n')) {
    if (!line.starts_with("0::")) continue;
    std::string dir = trimmed(cgroup_root) + (line == "0::/" ? "" : line.substr(3));
    if (dir.empty()) dir = "/";
    if (auto r = validate_cgroup_path(dir); !r) return std::unexpected(r.error().wrap(file));
    return dir;
  }
  return user_error(file + ": no cgroup v2 line (0::<path>); the container's process is not in the unified hierarchy");
}

Result<std::string> parent_cgroup_dir(const std::string& dir, const std::string& cgroup_root) {
  const std::string root = trimmed(cgroup_root);
  const auto slash = dir.rfind('/');
  if (!dir.starts_with(root + "/") || slash == std::string::npos || slash < root.size() + 1)
    return user_error(text::cat("cgroup ", text::quote(dir), " has no parent below ", cgroup_root));
  return dir.substr(0, slash);
}

}  // namespace gpufrac
