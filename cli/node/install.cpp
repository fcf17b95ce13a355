#include "cli/node/install.hpp"

#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include <set>

#include "cli/node/interp.hpp"
#include "core/build_info.hpp"
#include "core/driver/elf_info.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::cli::node {

namespace {

constexpr std::size_t kMaxBinary = 256u << 20;

Result<std::string> self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return sys_error("cannot read /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

// The NVIDIA driver's libraries: the host's driver, never carried.
bool from_driver(const std::string& name) {
  return name.starts_with("libnvidia-") || name.starts_with("libcuda.so");
}

// glibc's libraries that are not mapped now but that a library gpufrac loads may name: the driver's
// NVML (linked against a glibc before 2.34, it names libpthread, libdl and librt) and NSS. Carried
// from beside the libc gpufrac runs with, so that no part of the host's glibc mixes with the carried one.
constexpr const char* kGlibcExtras[] = {"libm.so.6",         "libmvec.so.1",   "libdl.so.2",  "libpthread.so.0",
                                        "librt.so.1",        "libutil.so.1",   "libanl.so.1", "libresolv.so.2",
                                        "libnss_files.so.2", "libnss_dns.so.2"};

struct Carried {
  std::vector<SourceFileSpec> files;
  std::string loader;  // relative to <install-dir>/<version>/ ("" when gpufrac runs without one)
};

// The start address of a /proc/self/maps line.
std::uint64_t map_start(const std::string& line) {
  return std::strtoull(line.c_str(), nullptr, 16);
}

// The shared libraries this gpufrac runs with (mapped now, /proc/self/maps), glibc and its loader
// included, but the driver's: installed under their SONAME into <version>/lib/, where its
// $ORIGIN/../lib RPATH finds them. The loader is the file mapped at AT_BASE.
Result<Carried> mapped_libraries() {
  auto maps = fs::read_file("/proc/self/maps", 4u << 20);
  if (!maps) return std::unexpected(maps.error());
  const std::uint64_t base = ::getauxval(AT_BASE);
  Carried out;
  std::set<std::string> seen;
  for (const auto& line : text::split(*maps, '\n')) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = fs::basename(path);
    const bool loader = base != 0 && map_start(line) == base;
    if ((!loader && name.find(".so") == std::string::npos) || from_driver(name) || !seen.insert(path).second) continue;
    auto elf = read_elf(path);
    if (!elf) return std::unexpected(elf.error());
    const std::string to = "lib/" + elf->soname.value_or(name);
    out.files.push_back({path, to, loader ? 0755u : 0644u});
    if (loader) out.loader = to;
  }
  return out;
}

// The mapped libraries plus glibc's others, from beside the mapped libc.so.6.
Result<Carried> carried() {
  auto c = mapped_libraries();
  if (!c) return std::unexpected(c.error());
  std::set<std::string> have;
  std::string libc_dir;
  for (const auto& f : c->files) {
    have.insert(f.to);
    if (f.to == "lib/libc.so.6") libc_dir = fs::dirname(f.from);
  }
  if (libc_dir.empty()) return c;
  for (const char* name : kGlibcExtras) {
    const std::string from = libc_dir + "/" + name;
    if (!have.contains(std::string("lib/") + name) && fs::exists(from))
      c->files.push_back({from, std::string("lib/") + name, 0644});
  }
  return c;
}

// The bytes to install from f: its interpreter, if it names one, set to <vdir><f.interp> (the
// absolute host path of the installed loader).
Result<std::string> install_content(const SourceFileSpec& f, const std::string& vdir) {
  auto content = fs::read_file(f.from, kMaxBinary);
  if (!content) return std::unexpected(content.error().wrap("while reading the file to install"));
  if (!f.interp.empty())
    if (auto r = set_program_interpreter(*content, vdir + f.interp); !r) return std::unexpected(r.error().wrap(f.from));
  return content;
}

// Switches <install-dir>/current to the version: a new link renamed over the old one.
Result<bool> switch_current(const HostFiles& host, const std::string& version) {
  const std::string link = host.at(host.install_dir() + "/current");
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n > 0 && std::string(buf, static_cast<std::size_t>(n)) == version) return false;
  const std::string tmp = text::cat(link, ".new.", ::getpid());
  ::unlink(tmp.c_str());
  if (::symlink(version.c_str(), tmp.c_str()) != 0) return sys_error("cannot create the link " + tmp);
  if (::rename(tmp.c_str(), link.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return sys_error("cannot switch " + link + " to " + version, err);
  }
  return true;
}

}  // namespace

Result<std::vector<SourceFileSpec>> install_sources() {
  auto exe = self_exe();
  if (!exe) return std::unexpected(exe.error());
  const std::string bin = fs::dirname(*exe);
  std::string shim = bin + "/libgpufrac-limits.so";
  if (!fs::exists(shim)) shim = std::string(build::kShimDir) + "/libgpufrac-limits.so";
  auto libs = carried();
  if (!libs) return std::unexpected(libs.error());
  std::vector<SourceFileSpec> out = {{*exe, "bin/gpufrac", 0755, libs->loader},
                                     {bin + "/gpufrac-hook", "bin/gpufrac-hook", 0755},
                                     {bin + "/gpufrac-runtime", "bin/gpufrac-runtime", 0755},
                                     {shim, "lib/gpufrac/libgpufrac-limits.so", 0644}};
  for (auto& l : libs->files) out.push_back(std::move(l));
  return out;
}

Installed installed_paths(const std::string& install_dir) {
  const std::string d = install_dir + "/current";
  return {d, d + "/bin/gpufrac", d + "/bin/gpufrac-hook", d + "/bin/gpufrac-runtime",
          d + "/lib/gpufrac/libgpufrac-limits.so"};
}

Result<bool> install_version(const HostFiles& host, Manifest& m, const std::string& version,
                             const std::vector<SourceFileSpec>& files) {
  if (version.empty() || version.find('/') != std::string::npos || version.starts_with("."))
    return user_error("version " + text::quote(version) + ": not a directory name");
  const std::string vdir = text::cat(host.install_dir(), "/", version, "/");
  bool changed = false, made = false;
  for (const auto& f : files) {
    auto content = install_content(f, vdir);
    if (!content) return std::unexpected(content.error());
    // After the first file is ready (the CLI, whose interpreter may not fit): a refusal creates nothing.
    if (!made) {
      if (auto r = host.make_dirs(m, host.install_dir()); !r) return std::unexpected(r.error());
      made = true;
    }
    const std::string to = vdir + f.to;
    if (auto r = fs::make_dirs(fs::dirname(host.at(to)), 0755); !r) return std::unexpected(r.error());
    struct stat st {};
    if (::stat(host.at(to).c_str(), &st) == 0 && (st.st_mode & 07777) == f.mode &&
        static_cast<std::size_t>(st.st_size) == content->size()) {
      auto now = fs::read_file(host.at(to), kMaxBinary);
      if (now && *now == *content) continue;
    }
    if (auto r = fs::write_file_atomic(host.at(to), *content, f.mode); !r) return std::unexpected(r.error());
    changed = true;
  }
  auto sw = switch_current(host, version);
  if (!sw) return std::unexpected(sw.error());
  return changed || *sw;
}

}  // namespace gpufrac::cli::node
