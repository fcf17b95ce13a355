#include "state/claim_members.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "core/fs.hpp"
#include "core/plan/plan.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

std::string members_path(const Config& cfg, const std::string& key) {
  return container_files(cfg, key).dir + "/members";
}

}  // namespace

std::string one_line_cgroups(const std::string& text) {
  std::string out = text;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  std::replace(out.begin(), out.end(), '\n', ';');
  return out;
}

Result<> add_claim_member(const Config& cfg, const std::string& key, long pid) {
  auto text = fs::read_file(text::cat(cfg.proc_root, "/", pid, "/cgroup"), 64u << 10);
  if (!text) return std::unexpected(text.error());
  const std::string one = one_line_cgroups(*text), line = one + "\n";
  const auto known = claim_members(cfg, key);
  if (std::find(known.begin(), known.end(), one) != known.end()) return {};
  const std::string path = members_path(cfg, key);
  fs::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return sys_error("cannot open " + path);
  return fs::write_all(fd.get(), line, path);  // one write with O_APPEND: containers starting together keep theirs
}

std::vector<std::string> claim_members(const Config& cfg, const std::string& key) {
  auto text = fs::read_file(members_path(cfg, key), 1u << 20);
  if (!text) return {};
  std::vector<std::string> out;
  for (const auto& line : text::split(*text, '\n'))
    if (!line.empty()) out.emplace_back(line);
  return out;
}

}  // namespace gpufrac
