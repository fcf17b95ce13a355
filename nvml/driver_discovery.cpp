#include "nvml/driver_discovery.hpp"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/driver/elf_info.hpp"
#include "core/driver/ld_cache.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

#if defined(__aarch64__)
constexpr const char* kMultiarch = "aarch64-linux-gnu";
#else
constexpr const char* kMultiarch = "x86_64-linux-gnu";
#endif

std::vector<std::string> kLibraryDirs() {
  return {text::cat("/usr/lib/", kMultiarch), "/usr/lib64", "/usr/lib",
          text::cat("/lib/", kMultiarch),     "/lib64",     "/lib"};
}

constexpr const char* kBinaries[] = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
                                     "nvidia-cuda-mps-server"};
constexpr const char* kSockets[] = {"/run/nvidia-persistenced/socket", "/run/nvidia-fabricmanager/socket",
                                    "/var/run/nvidia-persistenced/socket", "/var/run/nvidia-fabricmanager/socket"};

// The driver root as a directory fd, and its host path.
struct DriverRoot {
  fs::UniqueFd fd;
  std::string path;
};

// Opens `path` beneath the root, symlinks resolved inside it (never above it), no /proc magic links.
fs::UniqueFd open_beneath(const DriverRoot& root, std::string_view path, int flags) {
  open_how how{};
  // openat2 refuses flags O_PATH does not take (O_NOCTTY among them).
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY));
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const std::string rel = "." + std::string(path);
  return fs::UniqueFd(static_cast<int>(::syscall(SYS_openat2, root.fd.get(), rel.c_str(), &how, sizeof how)));
}

// The host path of an fd opened beneath the root (through /proc/self/fd), checked to be inside it.
std::optional<std::string> real_path(const DriverRoot& root, int fd) {
  char buf[4096];
  const ssize_t n = ::readlink(text::cat("/proc/self/fd/", fd).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  std::string p(buf, static_cast<std::size_t>(n));
  if (root.path != "/" && p != root.path && !p.starts_with(root.path + "/")) return std::nullopt;
  return p;
}

// The path inside the driver root of a real host path.
std::string inside_root(const DriverRoot& root, const std::string& real) {
  return root.path == "/" ? real : real.substr(root.path.size());
}

struct Entry {
  std::string name;
  mode_t mode = 0;
};

// Regular files and sockets of a directory (lstat: a symlink in a library directory is not a
// library of the driver, it is one of the links the driver's installer made).
std::vector<Entry> list_dir(int dir_fd) {
  std::vector<Entry> out;
  int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
  if (d == nullptr) {
    if (dup >= 0) ::close(dup);
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    struct stat st {};
    if (::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) out.push_back({e->d_name, st.st_mode});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

struct LibDir {
  fs::UniqueFd fd;
  std::string real;       // host path
  std::string container;  // canonical container path
};

std::optional<LibDir> open_lib_dir(const DriverRoot& root, std::string_view dir) {
  fs::UniqueFd fd = open_beneath(root, dir, O_RDONLY | O_DIRECTORY);
  if (!fd) return std::nullopt;
  auto real = real_path(root, fd.get());
  if (!real) return std::nullopt;
  std::string container = canonical_container_path(inside_root(root, *real));
  return LibDir{std::move(fd), std::move(*real), std::move(container)};
}

bool has_regular(int dir_fd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

// The directory holding libcuda.so.<version> (else libnvidia-ml.so.<version>): the usual
// directories first, then the driver root's own loader cache. Nothing when neither is there.
std::optional<LibDir> find_library_dir(const DriverRoot& root, const std::string& version) {
  const std::vector<std::string> names = {"libcuda.so." + version, "libnvidia-ml.so." + version};
  for (const auto& name : names)
    for (const auto& dir : kLibraryDirs())
      if (auto d = open_lib_dir(root, dir); d && has_regular(d->fd.get(), name)) return d;
  fs::UniqueFd cache = open_beneath(root, "/etc/ld.so.cache", O_RDONLY | O_NONBLOCK);
  auto bytes = cache ? fs::read_fd(cache.get(), 64u << 20, "ld.so.cache") : Result<std::string>("");
  auto entries = bytes ? parse_ld_cache(*bytes) : Result<std::vector<LdCacheEntry>>();
  if (!entries) return std::nullopt;
  for (std::size_t i = 0; i < names.size(); ++i)
    for (const auto& e : *entries)
      if (e.name == (i == 0 ? "libcuda.so.1" : "libnvidia-ml.so.1") && e.flags == native_ld_cache_flags())
        if (auto d = open_lib_dir(root, fs::dirname(e.path)); d && has_regular(d->fd.get(), names[i])) return d;
  return std::nullopt;
}

bool is_versioned_library(const std::string& name, const std::string& version) {
  return name.starts_with("lib") && name.ends_with(".so." + version);
}

// Each library of the version, then its SONAME link and libcuda.so (a link is a bind of the library).
Result<> add_libraries(const LibDir& dir, const std::string& sub, const std::string& version, DriverFiles& out) {
  const std::string real = sub.empty() ? dir.real : dir.real + "/" + sub;
  const std::string container = sub.empty() ? dir.container : dir.container + "/" + sub;
  fs::UniqueFd fd(sub.empty() ? ::fcntl(dir.fd.get(), F_DUPFD_CLOEXEC, 0)
                              : ::openat(dir.fd.get(), sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return {};
  for (const Entry& e : list_dir(fd.get())) {
    if (!S_ISREG(e.mode)) continue;
    if (!is_versioned_library(e.name, version) && !e.name.starts_with("libnvidia-nvvm70.so.")) continue;
    const std::string host = real + "/" + e.name;
    out.files.push_back({DriverFileKind::library, host, container + "/" + e.name});
    if (!sub.empty()) continue;  // vdpau/ libraries are loaded by path: no links
    auto elf = read_elf(host);
    if (!elf) return std::unexpected(elf.error().wrap("reading a driver library's SONAME"));
    if (elf->soname && *elf->soname != e.name && elf->soname->find('/') == std::string::npos)
      out.files.push_back({DriverFileKind::link, host, container + "/" + *elf->soname});
    if (e.name == "libcuda.so." + version) out.files.push_back({DriverFileKind::link, host, container + "/libcuda.so"});
  }
  return {};
}

}  // namespace

std::optional<std::string> parse_kernel_module_version(std::string_view text) {
  const std::size_t at = text.find("Kernel Module");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at);
  rest = rest.substr(0, rest.find('\n'));
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(rest[i])) || (i > 0 && rest[i - 1] != ' ')) continue;
    std::size_t end = i;
    while (end < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[end])) || rest[end] == '.')) ++end;
    const std::string_view token = rest.substr(i, end - i);
    if (token.find('.') != std::string_view::npos && (end == rest.size() || rest[end] == ' '))
      return std::string(token);
  }
  return std::nullopt;
}

std::string canonical_container_path(std::string_view p) {
  for (auto [from, to] : {std::pair<std::string_view, std::string_view>{"/lib", "/usr/lib"},
                          {"/lib64", "/usr/lib64"},
                          {"/lib32", "/usr/lib32"},
                          {"/bin", "/usr/bin"},
                          {"/sbin", "/usr/sbin"},
                          {"/var/run", "/run"}})
    if (p == from || (p.starts_with(from) && p[from.size()] == '/'))
      return std::string(to) + std::string(p.substr(from.size()));
  return std::string(p);
}

namespace {

// The driver's own bin directory, beside its library directory: /usr/lib/<multiarch> and
// /usr/lib64 -> /usr/bin, /usr/local/nvidia/lib64 -> /usr/local/nvidia/bin.
std::string bin_dir_beside(std::string lib_dir) {
  if (lib_dir.ends_with(text::cat("/", kMultiarch))) lib_dir = fs::dirname(lib_dir);
  const std::string last = fs::basename(lib_dir);
  if (last != "lib" && last != "lib64" && last != "lib32") return "";
  return fs::dirname(lib_dir) == "/" ? "/bin" : fs::dirname(lib_dir) + "/bin";
}

bool is_elf_program(int fd) {
  struct stat st {};
  char magic[SELFMAG] = {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR) &&
         ::pread(fd, magic, SELFMAG, 0) == SELFMAG && std::memcmp(magic, ELFMAG, SELFMAG) == 0;
}

// Each binary from the driver's own bin directory first, then the usual ones. Only ELF programs:
// a shell wrapper (cloud images' /usr/bin/nvidia-smi execs /usr/local/nvidia/bin/nvidia-smi) names
// host paths the container does not have. A binary outside /usr/bin and /usr/sbin is mounted at
// /usr/bin/<name>, on every image's PATH.
void add_binaries(const DriverRoot& root, const std::string& lib_dir, DriverFiles& out) {
  std::vector<std::string> dirs = {"/usr/bin", "/usr/sbin", "/bin", "/sbin"};
  if (const std::string own = bin_dir_beside(lib_dir); !own.empty()) dirs.insert(dirs.begin(), own);
  for (const char* name : kBinaries)
    for (const std::string& dir : dirs) {
      fs::UniqueFd fd = open_beneath(root, dir + "/" + name, O_RDONLY | O_NONBLOCK);
      auto real = fd && is_elf_program(fd.get()) ? real_path(root, fd.get()) : std::nullopt;
      if (!real) continue;
      std::string container = canonical_container_path(inside_root(root, *real));
      if (!container.starts_with("/usr/bin/") && !container.starts_with("/usr/sbin/"))
        container = text::cat("/usr/bin/", name);
      out.files.push_back({DriverFileKind::binary, *real, container});
      break;
    }
}

// GSP firmware: /lib/firmware[/updates][/<kernel release>]/nvidia/<version>/gsp*.bin.
void add_firmware(const DriverRoot& root, const std::string& version, DriverFiles& out) {
  utsname u{};
  const std::string release = ::uname(&u) == 0 ? u.release : "";
  std::vector<std::string> dirs = {"/lib/firmware/nvidia/" + version, "/lib/firmware/updates/nvidia/" + version};
  if (!release.empty()) dirs.push_back("/lib/firmware/" + release + "/nvidia/" + version);
  for (const auto& dir : dirs) {
    auto d = open_lib_dir(root, dir);
    if (!d) continue;
    for (const Entry& e : list_dir(d->fd.get()))
      if (S_ISREG(e.mode) && e.name.starts_with("gsp") && e.name.ends_with(".bin") &&
          std::none_of(out.files.begin(), out.files.end(),
                       [&](const DriverFile& f) { return f.container_path == d->container + "/" + e.name; }))
        out.files.push_back({DriverFileKind::firmware, d->real + "/" + e.name, d->container + "/" + e.name});
  }
}

void add_sockets(const DriverRoot& root, DriverFiles& out) {
  for (const char* path : kSockets) {
    fs::UniqueFd fd = open_beneath(root, path, O_PATH);
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    auto real = real_path(root, fd.get());
    if (!real) continue;
    const std::string container = canonical_container_path(inside_root(root, *real));
    if (std::none_of(out.files.begin(), out.files.end(),
                     [&](const DriverFile& f) { return f.container_path == container; }))
      out.files.push_back({DriverFileKind::socket, *real, container});
  }
}

Result<> check_kernel_module(const Config& cfg, const std::string& nvml_version) {
  const std::string path = cfg.host_path("/proc/driver/nvidia/version");
  if (!fs::exists(path)) return {};
  auto text = fs::read_file(path, 64u << 10);
  if (!text) return std::unexpected(text.error());
  auto kernel = parse_kernel_module_version(*text);
  if (!kernel) return internal_error(path + ": no \"Kernel Module <version>\" line");
  if (*kernel != nvml_version)
    return internal_error(text::cat("the NVIDIA kernel module is ", *kernel, " (", path, ") but NVML reports ",
                                    nvml_version,
                                    ": the driver's libraries and its kernel module differ; reload the driver or "
                                    "reboot, then run gpufrac info --refresh"));
  return {};
}

}  // namespace

Result<std::optional<DriverFiles>> discover_driver_files(const Config& cfg, const std::string& nvml_version) {
  if (auto r = check_kernel_module(cfg, nvml_version); !r) return std::unexpected(r.error());
  const std::string where = fs::join_root(cfg.host_root, cfg.driver.root);
  DriverRoot root{fs::UniqueFd(::open(where.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)), "/"};
  if (!root.fd && errno == ENOENT) return std::optional<DriverFiles>();  // no driver tree at all
  if (!root.fd) return sys_error("driver.root " + where);
  auto real = real_path(root, root.fd.get());  // with path "/": any real path is inside
  if (!real) return internal_error("cannot resolve driver.root " + where);
  root.path = *real;
  auto dir = find_library_dir(root, nvml_version);
  if (!dir) return std::optional<DriverFiles>();
  DriverFiles out;
  out.version = nvml_version;
  out.root = cfg.driver.root;
  if (auto r = add_libraries(*dir, "", nvml_version, out); !r) return std::unexpected(r.error());
  if (auto r = add_libraries(*dir, "vdpau", nvml_version, out); !r) return std::unexpected(r.error());
  out.library_dirs = {dir->container};
  add_binaries(root, inside_root(root, dir->real), out);
  add_firmware(root, nvml_version, out);
  add_sockets(root, out);
  return std::optional<DriverFiles>(std::move(out));
}

Error missing_driver_files(const Config& cfg, const std::string& version) {
  return Error{text::cat("no libcuda.so.", version, " or libnvidia-ml.so.", version, " under ",
                         fs::join_root(cfg.host_root, cfg.driver.root), " (searched ", text::join(kLibraryDirs(), ", "),
                         " and its /etc/ld.so.cache): is the driver's user space installed? driver.root names where it "
                         "lives; driver.inject: never turns injection off"),
               0, ErrorKind::internal};
}

Result<> attach_driver_files(const Config& cfg, Inventory& inv, bool required) {
  inv.driver = {};
  if (cfg.driver.inject == DriverInject::never) return {};
  auto found = discover_driver_files(cfg, inv.driver_version);
  if (!found) return std::unexpected(found.error());
  if (*found) {
    inv.driver = std::move(**found);
    return {};
  }
  if (required || cfg.driver.inject == DriverInject::always)
    return std::unexpected(missing_driver_files(cfg, inv.driver_version));
  return {};
}

}  // namespace gpufrac
