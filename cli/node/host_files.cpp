#include "cli/node/host_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cli::node {

namespace {

constexpr std::size_t kMaxFile = 4u << 20;

nlohmann::json to_json(const Manifest& m) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : m.files)
    files.push_back({{"path", f.path}, {"created", f.created}, {"mode", f.mode}, {"written", f.written}});
  return {{"version", m.version},
          {"versions", m.versions},
          {"restart_pending", m.restart_pending},
          {"files", files},
          {"dirs", m.dirs}};
}

Result<Manifest> from_json(const std::string& text, const std::string& path) {
  try {
    auto j = nlohmann::json::parse(text);
    Manifest m;
    m.version = j.at("version").get<std::string>();
    m.versions = j.at("versions").get<std::vector<std::string>>();
    m.restart_pending = j.at("restart_pending").get<bool>();
    for (const auto& f : j.at("files"))
      m.files.push_back({f.at("path").get<std::string>(), f.at("created").get<bool>(), f.at("mode").get<unsigned>(),
                         f.at("written").get<std::string>()});
    m.dirs = j.at("dirs").get<std::vector<std::string>>();
    return m;
  } catch (const std::exception& e) {
    return user_error(path + ": not a setup record (" + e.what() + "); remove it to start over");
  }
}

ManagedFile* find(Manifest& m, const std::string& path) {
  for (auto& f : m.files)
    if (f.path == path) return &f;
  return nullptr;
}

}  // namespace

HostFiles::HostFiles(std::string root, std::string install_dir)
    : root_(std::move(root)), install_dir_(std::move(install_dir)) {}

std::string HostFiles::at(const std::string& host_path) const {
  return fs::join_root(root_, host_path);
}

std::string HostFiles::manifest_path() const {
  return install_dir_ + "/setup.json";
}

std::string HostFiles::backup_path(const std::string& host_path) const {
  return install_dir_ + "/backup" + host_path;
}

Result<Manifest> HostFiles::load() const {
  auto text = read(manifest_path());
  if (!text) return std::unexpected(text.error());
  if (!*text) return Manifest{};
  return from_json(**text, at(manifest_path()));
}

Result<> HostFiles::save(const Manifest& m) const {
  const std::string text = to_json(m).dump(2) + "\n";
  auto old = read(manifest_path());
  if (old && *old && **old == text) return {};
  return fs::write_file_atomic(at(manifest_path()), text, 0644);
}

Result<std::optional<std::string>> HostFiles::read(const std::string& host_path) const {
  const std::string p = at(host_path);
  if (!fs::exists(p)) return std::optional<std::string>{};
  auto text = fs::read_file(p, kMaxFile);
  if (!text) return std::unexpected(text.error());
  return std::optional<std::string>(std::move(*text));
}

Result<> HostFiles::make_dirs(Manifest& m, const std::string& host_path) const {
  std::vector<std::string> missing;
  for (std::string d = host_path; d.size() > 1 && !fs::exists(at(d)); d = fs::dirname(d)) missing.push_back(d);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(at(*it).c_str(), 0755) != 0 && errno != EEXIST) return sys_error("cannot create directory " + at(*it));
    if (std::find(m.dirs.begin(), m.dirs.end(), *it) == m.dirs.end()) m.dirs.push_back(*it);
  }
  return {};
}

Result<bool> HostFiles::put(Manifest& m, const std::string& host_path, const std::string& content) const {
  auto current = read(host_path);
  if (!current) return std::unexpected(current.error());
  ManagedFile* f = find(m, host_path);
  if (*current && **current == content && f) return false;
  if (!f) {
    struct stat st {};
    const bool exists = ::stat(at(host_path).c_str(), &st) == 0;
    m.files.push_back({host_path, !exists, exists ? (st.st_mode & 07777u) : 0644u, ""});
    f = &m.files.back();
    if (exists) {
      if (auto r = make_dirs(m, fs::dirname(backup_path(host_path))); !r) return std::unexpected(r.error());
      if (auto r = fs::write_file_atomic(at(backup_path(host_path)), **current, f->mode); !r)
        return std::unexpected(r.error());
    }
  }
  f->written = text::fnv1a64_hex(content);
  if (*current && **current == content) return false;
  if (auto r = make_dirs(m, fs::dirname(host_path)); !r) return std::unexpected(r.error());
  if (auto r = fs::write_file_atomic(at(host_path), content, f->mode); !r) return std::unexpected(r.error());
  return true;
}

Result<std::vector<std::string>> HostFiles::restore(const Manifest& m) const {
  std::vector<std::string> done;
  for (auto it = m.files.rbegin(); it != m.files.rend(); ++it) {
    auto current = read(it->path);
    if (!current) return std::unexpected(current.error());
    if (*current && text::fnv1a64_hex(**current) != it->written) {
      std::fprintf(stderr, "gpufrac: %s changed since setup; left as it is (the original is in %s)\n",
                   at(it->path).c_str(), at(backup_path(it->path)).c_str());
      continue;
    }
    if (it->created) {
      if (*current && ::unlink(at(it->path).c_str()) != 0 && errno != ENOENT)
        return sys_error("cannot remove " + at(it->path));
    } else {
      auto original = read(backup_path(it->path));
      if (!original) return std::unexpected(original.error());
      if (!*original) return user_error(at(backup_path(it->path)) + ": backup missing; cannot restore " + it->path);
      if (auto r = fs::write_file_atomic(at(it->path), **original, it->mode); !r) return std::unexpected(r.error());
    }
    done.push_back(it->path);
  }
  return done;
}

void HostFiles::remove_created_dirs(const Manifest& m) const {
  std::vector<std::string> dirs = m.dirs;
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& d : dirs) ::rmdir(at(d).c_str());
}

}  // namespace gpufrac::cli::node
