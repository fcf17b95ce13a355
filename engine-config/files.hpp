// The effectful half of `gpufrac runtime configure`: reading the engine's files (containerd's
// imports resolved the way containerd does) and writing a plan: each changed file is first copied
// to <file>.gpufrac.bak (once: an existing backup is kept, so it stays the operator's original),
// then replaced atomically with its mode kept (new files 0644, directories created 0755).
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"
#include "engine-config/configure.hpp"
#include "engine-config/containerd.hpp"

namespace gpufrac::engine_config {

// A file's content; a missing file is nullopt, any other read error is an error. With a root, the
// file read is <root><path> and the SourceFile keeps the path as the engine names it.
Result<SourceFile> read_source(const std::string& path, const std::string& root = "");

// containerd's inputs: config.toml, and the files it imports split around the drop-in (load order:
// config.toml, its imports in order with globs sorted, then their imports; the drop-in is appended
// to config.toml's imports when they do not name it yet). Paths are the engine's (its host's);
// root is where that host's / is mounted ("" or "/" for this one).
Result<ContainerdInput> load_containerd(const std::string& config_path, const std::string& drop_in_path,
                                        const std::string& runtime_path, std::optional<int> version,
                                        const std::string& root = "");

struct Written {
  std::string path;
  bool created = false;
  std::string backup;  // "" when none was made now
};

Result<std::vector<Written>> apply_plan(const Plan& plan);

}  // namespace gpufrac::engine_config
