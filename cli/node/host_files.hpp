// What `gpufrac node setup` changed on the host, so that `gpufrac node teardown` puts every byte
// back: <install-dir>/setup.json lists each file it wrote (created, or replaced with the original
// kept under <install-dir>/backup/<path>, mode included) with a digest of what it wrote, and each
// directory it created. A file is backed up once, before its first change: the backup stays the
// operator's original through any number of runs. Writes are atomic (temp file, rename) and happen
// only when the bytes differ, so a second run with the same inputs changes nothing.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace gpufrac::cli::node {

struct ManagedFile {
  std::string path;  // host path
  bool created = false;
  unsigned mode = 0644;  // the original's (restored with it)
  std::string written;   // fnv1a64 of the bytes written last
};

struct Manifest {
  std::string version;                // of the last setup
  std::vector<std::string> versions;  // every version installed (directories under the install dir)
  bool restart_pending = false;
  std::vector<ManagedFile> files;
  std::vector<std::string> dirs;  // created, host paths, parents first
};

// The host and the install dir: every path here is a host path, read and written under root.
class HostFiles {
 public:
  HostFiles(std::string root, std::string install_dir);
  const std::string& root() const { return root_; }
  const std::string& install_dir() const { return install_dir_; }
  std::string at(const std::string& host_path) const;  // <root><host_path>
  std::string manifest_path() const;                   // host path of setup.json

  // The manifest of an earlier setup (empty when none).
  Result<Manifest> load() const;
  // Writes it when its bytes changed.
  Result<> save(const Manifest& m) const;

  // The file's content; nullopt when missing.
  Result<std::optional<std::string>> read(const std::string& host_path) const;
  // mkdir -p, recording the directories made in m.dirs.
  Result<> make_dirs(Manifest& m, const std::string& host_path) const;
  // Puts content at host_path (recorded in m, original backed up once). True when it wrote.
  Result<bool> put(Manifest& m, const std::string& host_path, const std::string& content) const;

  // Teardown: each file back as it was (a file changed by someone else since is left, with a line
  // on stderr). Returns the paths restored or removed.
  Result<std::vector<std::string>> restore(const Manifest& m) const;
  // The directories setup created, removed when empty (deepest first).
  void remove_created_dirs(const Manifest& m) const;

 private:
  std::string backup_path(const std::string& host_path) const;
  std::string root_, install_dir_;
};

}  // namespace gpufrac::cli::node
