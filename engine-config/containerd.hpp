// containerd: the runtime handler "gpufrac" as a drop-in imported by the main config.toml.
//
// containerd 1.x and 2.0 load config.toml, then its imports in order (globs sorted, imports of
// imports after), and a file that sets a plugin replaces that plugin's whole table: a drop-in that
// only added [...runtimes.gpufrac] would drop every CRI setting of config.toml and the default runc
// runtime (containerd 1.6.20 shows both in `config dump`). So the drop-in repeats the CRI plugin
// tables of the last file loaded before it that sets them, adds runc when that file does not define
// it, and adds gpufrac (runtime_type and options copied from runc, BinaryName = gpufrac-runtime,
// pod and container annotation allow-lists). A file loaded after the drop-in that sets the CRI
// plugin would drop gpufrac again: that is refused.
//
// Config versions: 2 (containerd 1.x, plugin io.containerd.grpc.v1.cri) and 3 (2.x, plugin
// io.containerd.cri.v1.runtime), read from config.toml's top-level `version`. A missing config.toml
// is created with version 2 (the default of containerd 1.x) unless told otherwise; a config.toml
// without `version` is version 1, which is refused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "engine-config/configure.hpp"

namespace gpufrac::engine_config {

struct ContainerdInput {
  SourceFile main;                 // config.toml
  std::vector<SourceFile> before;  // files containerd loads after config.toml and before the drop-in
  std::vector<SourceFile> after;   // files it loads after the drop-in
  SourceFile drop_in;
  bool drop_in_imported = false;  // config.toml's imports already name the drop-in (path or glob)
  std::string runtime_path;
  std::optional<int> version;  // for a missing config.toml (2 or 3)
  // Non-empty: CDI turned on in the drop-in where it is off, with these spec dirs when unset
  // (`gpufrac node setup`; detail::render_drop_in).
  std::vector<std::string> cdi_spec_dirs;
};

// The imports entries of a config.toml (root-level `imports`), [] when none.
Result<std::vector<std::string>> containerd_imports(const SourceFile& file);
// An import entry as containerd resolves it: with a "*" a glob (as written), otherwise a path
// relative to the importing file's directory.
std::string resolve_import(const std::string& entry, const std::string& importing_file);
// True when one of config.toml's entries names the drop-in (same path, or a glob matching it).
bool imports_name(const std::vector<std::string>& entries, const std::string& main_path, const std::string& drop_in);

Result<Plan> plan_containerd(const ContainerdInput& input);

}  // namespace gpufrac::engine_config
