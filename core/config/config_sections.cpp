// The path-like and CDI sections of the config file (split from config.cpp to keep files small).
#include "core/config/config.hpp"
#include "core/config/yaml_util.hpp"
#include "core/fs.hpp"
#include "core/request/compute_share.hpp"

namespace gpufrac {

using yaml::Located;

namespace {

Result<std::string> absolute_path(const Located& n) {
  auto s = yaml::as_string(n);
  if (!s) return s;
  if (s->empty()) return n.fail("must not be empty");
  if (s->front() != '/') {
    return fs::dirname(n.file) + "/" + *s;  // relative to the config file
  }
  return *s;
}

Result<std::string> section_path(const Located& root, const char* section) {
  Located n = root.child(section);
  if (auto r = yaml::check_keys(n, {"path"}); !r) return std::unexpected(r.error());
  if (!n.node["path"]) return n.fail("needs path: <absolute file>");
  return absolute_path(n.child("path"));
}

}  // namespace

Result<> parse_paths_section(const Located& root, Config& c) {
  struct Field {
    const char* key;
    std::string* target;
  };
  const Field top[] = {{"state-dir", &c.state_dir},
                       {"host-root", &c.host_root},
                       {"proc-root", &c.proc_root},
                       {"cgroup-root", &c.cgroup_root}};
  for (const auto& f : top) {
    if (!root.node[f.key]) continue;
    auto v = absolute_path(root.child(f.key));
    if (!v) return std::unexpected(v.error());
    *f.target = *v;
  }
  const Field sections[] = {{"shim", &c.shim_path}, {"hook", &c.hook_path}, {"cli", &c.cli_path}};
  for (const auto& f : sections) {
    if (!root.node[f.key]) continue;
    auto v = section_path(root, f.key);
    if (!v) return std::unexpected(v.error());
    *f.target = *v;
  }
  return {};
}

Result<> parse_cdi_section(const Located& n, CdiConfig& out) {
  if (auto r = yaml::check_keys(n, {"output", "spec-dirs", "fractions", "memory-shares", "sm-shares"}); !r) return r;
  if (n.node["output"]) {
    auto v = absolute_path(n.child("output"));
    if (!v) return std::unexpected(v.error());
    out.output = *v;
  }
  if (n.node["spec-dirs"]) {
    auto v = yaml::as_string_list(n.child("spec-dirs"));
    if (!v) return std::unexpected(v.error());
    out.spec_dirs = *v;
  }
  if (n.node["fractions"]) {
    auto list = yaml::as_string_list(n.child("fractions"));
    if (!list) return std::unexpected(list.error());
    out.fractions.clear();
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto f = parse_fraction((*list)[i]);
      if (!f) return n.child("fractions").item(i).fail(f.error().message);
      out.fractions.push_back(*f);
    }
  }
  if (n.node["memory-shares"]) {
    auto list = yaml::as_string_list(n.child("memory-shares"));
    if (!list) return std::unexpected(list.error());
    out.memory_shares.clear();
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto m = parse_memory((*list)[i]);
      if (!m) return n.child("memory-shares").item(i).fail(m.error().message);
      out.memory_shares.push_back(*m);
    }
  }
  if (n.node["sm-shares"]) {  // SM-share devices <gpu>-sm<percent> (docs/architecture.md "SM sharing")
    auto list = yaml::as_string_list(n.child("sm-shares"));
    if (!list) return std::unexpected(list.error());
    out.sm_shares.clear();
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto ppm = parse_compute_percent((*list)[i]);
      if (!ppm)
        return n.child("sm-shares").item(i).fail("is not a percent of the SMs; use an integer 1 to 100, e.g. 30");
      out.sm_shares.push_back(*ppm / kPpmPerPercent);
    }
  }
  return {};
}

}  // namespace gpufrac
