#include "engine-config/files.hpp"

#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <set>

#include "core/fs.hpp"

namespace gpufrac::engine_config {

namespace {

constexpr std::size_t kMaxConfigBytes = 4u << 20;

// The files one import entry stands for (a glob sorted, as Go's filepath.Glob returns them). A glob
// that matches the drop-in lists it even before it exists: that is where containerd will load it.
std::vector<std::string> expand(const std::string& resolved, const std::string& drop_in, const std::string& root) {
  if (resolved.find('*') == std::string::npos) return {resolved};
  glob_t g{};
  std::vector<std::string> out;
  const std::string rooted = fs::join_root(root.empty() ? "/" : root, resolved);
  const std::size_t strip = rooted.size() - resolved.size();
  if (::glob(rooted.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i] + strip);
  ::globfree(&g);
  if (::fnmatch(resolved.c_str(), drop_in.c_str(), FNM_PATHNAME) == 0 &&
      std::find(out.begin(), out.end(), drop_in) == out.end())
    out.insert(std::upper_bound(out.begin(), out.end(), drop_in), drop_in);
  return out;
}

mode_t mode_of(const std::string& path, mode_t fallback) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : fallback;
}

}  // namespace

Result<SourceFile> read_source(const std::string& path, const std::string& root) {
  const std::string at = root.empty() ? path : fs::join_root(root, path);
  if (!fs::exists(at)) return SourceFile{path, std::nullopt};
  auto text = fs::read_file(at, kMaxConfigBytes);
  if (!text) return std::unexpected(text.error());
  return SourceFile{path, std::move(*text)};
}

Result<ContainerdInput> load_containerd(const std::string& config_path, const std::string& drop_in_path,
                                        const std::string& runtime_path, std::optional<int> version,
                                        const std::string& root) {
  ContainerdInput in;
  in.runtime_path = runtime_path;
  in.version = version;
  auto main = read_source(config_path, root);
  if (!main) return std::unexpected(main.error());
  in.main = std::move(*main);
  auto drop_in = read_source(drop_in_path, root);
  if (!drop_in) return std::unexpected(drop_in.error());
  in.drop_in = std::move(*drop_in);
  auto entries = containerd_imports(in.main);
  if (!entries) return std::unexpected(entries.error());
  in.drop_in_imported = imports_name(*entries, config_path, drop_in_path);
  if (!in.drop_in_imported) entries->push_back(drop_in_path);
  std::set<std::string> loaded = {config_path};
  std::deque<std::pair<std::string, std::string>> pending;  // (entry, importing file)
  for (const auto& e : *entries) pending.emplace_back(e, config_path);
  bool seen_drop_in = false;
  while (!pending.empty()) {
    auto [entry, parent] = pending.front();
    pending.pop_front();
    for (const auto& path : expand(resolve_import(entry, parent), drop_in_path, root)) {
      if (!loaded.insert(path).second) continue;
      if (path == drop_in_path) {
        seen_drop_in = true;
        continue;
      }
      auto f = read_source(path, root);
      if (!f) return std::unexpected(f.error());
      if (!f->text) continue;  // containerd itself would refuse a missing import; not ours to judge
      auto nested = containerd_imports(*f);
      if (!nested) return std::unexpected(nested.error());
      for (const auto& n : *nested) pending.emplace_back(n, path);
      (seen_drop_in ? in.after : in.before).push_back(std::move(*f));
    }
  }
  return in;
}

Result<std::vector<Written>> apply_plan(const Plan& plan) {
  std::vector<Written> out;
  for (const auto& f : plan.files) {
    if (!f.changed()) continue;
    Written w{f.path, !f.before, ""};
    const mode_t mode = mode_of(f.path, 0644);
    if (f.before && !fs::exists(f.path + kBackupSuffix)) {
      if (auto r = fs::write_file_atomic(f.path + kBackupSuffix, *f.before, mode); !r)
        return std::unexpected(r.error());
      w.backup = f.path + kBackupSuffix;
    }
    if (auto r = fs::make_dirs(fs::dirname(f.path), 0755); !r) return std::unexpected(r.error());
    if (auto r = fs::write_file_atomic(f.path, f.after, mode); !r) return std::unexpected(r.error());
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace gpufrac::engine_config
