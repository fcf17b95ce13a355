#include "cdi/spec_dirs.hpp"

#include <dirent.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "cdi/spec_file.hpp"
#include "cdi/validate.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

struct Definition {
  std::size_t priority = 0;
  std::size_t file_index = 0;  // order of files, for the output order
  std::size_t position = 0;    // order in the file
  std::string file;
  bool conflict = false;
};

Result<std::vector<std::string>> spec_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return sys_error("cannot read spec directory " + dir);
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d))
    if (is_spec_file_name(e->d_name) && e->d_name[0] != '.') names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (auto& n : names) n = fs::join_root(dir, "/" + n);
  return names;
}

// The devices of one valid spec file, or a warning saying why it is skipped.
std::vector<std::string> devices_of(const std::string& file, std::vector<std::string>& warnings) {
  auto spec = read_spec_file(file);
  if (!spec) {
    warnings.push_back(file + ": skipped: " + spec.error().message);
    return {};
  }
  auto problems = validate_spec(*spec);
  for (const auto& p : problems)
    if (p.severity == Severity::error) {
      warnings.push_back(text::cat(file, ": skipped: ", format_problem(p), " (gpufrac cdi validate ", file, ")"));
      return {};
    }
  std::vector<std::string> out;
  const std::string kind = (*spec)["kind"].get<std::string>();
  for (const auto& d : (*spec)["devices"]) out.push_back(kind + "=" + d["name"].get<std::string>());
  return out;
}

void define(std::map<std::string, Definition>& defs, const std::string& name, Definition def) {
  auto [it, fresh] = defs.emplace(name, def);
  if (fresh || def.priority > it->second.priority) {
    it->second = std::move(def);
  } else if (def.priority == it->second.priority) {
    it->second.conflict = true;
    it->second.file += " and " + def.file;
  }
}

}  // namespace

Listing list_spec_dirs(const std::vector<std::string>& dirs) {
  Listing out;
  std::map<std::string, Definition> defs;
  std::size_t file_index = 0;
  for (std::size_t p = 0; p < dirs.size(); ++p) {
    auto files = spec_files(dirs[p]);
    if (!files) {
      out.warnings.push_back(files.error().message);
      continue;
    }
    for (const auto& f : *files) {
      auto names = devices_of(f, out.warnings);
      for (std::size_t i = 0; i < names.size(); ++i) define(defs, names[i], Definition{p, file_index, i, f, false});
      ++file_index;
    }
  }
  std::vector<std::pair<const std::string*, const Definition*>> kept;
  for (const auto& [name, def] : defs) {
    if (def.conflict)
      out.warnings.push_back(name + ": defined in " + def.file + " (same priority): runtimes refuse it as conflicting");
    else
      kept.emplace_back(&name, &def);
  }
  // Highest priority first, then file order, then order in the file.
  auto key = [](const Definition* d) {
    return std::make_tuple(-static_cast<long>(d->priority), d->file_index, d->position);
  };
  std::sort(kept.begin(), kept.end(), [&](const auto& a, const auto& b) { return key(a.second) < key(b.second); });
  for (const auto& [name, def] : kept) out.devices.push_back(ListedDevice{*name, def->file});
  return out;
}

}  // namespace gpufrac::cdi
