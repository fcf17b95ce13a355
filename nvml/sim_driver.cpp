#include "nvml/sim_driver.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/driver/elf_info.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "nvml/device_nodes.hpp"
#include "nvml/sim_root.hpp"

namespace gpufrac {

namespace {

#if defined(__aarch64__)
constexpr const char* kMultiarch = "aarch64-linux-gnu";
#else
constexpr const char* kMultiarch = "x86_64-linux-gnu";
#endif

constexpr const char* kCudaMarker = "GPUFRAC-EMBEDDED-CUDA-DEVICES:";
constexpr const char* kNvmlMarker = "GPUFRAC-EMBEDDED-NVML-MACHINE:";
constexpr const char* kStandInBinaries[] = {"nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-server"};

std::string lib_dir(SimDriverLayout layout) {
  if (layout == SimDriverLayout::prefix) return "/usr/local/nvidia/lib64";
  return layout == SimDriverLayout::lib64 ? "/usr/lib64" : text::cat("/usr/lib/", kMultiarch);
}

std::string bin_dir(SimDriverLayout layout) {
  return layout == SimDriverLayout::prefix ? "/usr/local/nvidia/bin" : "/usr/bin";
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Writes `payload` into the zero-filled buffer that follows `marker` in a fake library's bytes (the
// one occurrence followed by a run of zeros: the marker text may also appear as a constant).
Result<std::string> embed(std::string bytes, std::string_view marker, const std::string& payload,
                          const std::string& what) {
  std::size_t found = std::string::npos, room = 0;
  for (std::size_t at = bytes.find(marker); at != std::string::npos; at = bytes.find(marker, at + 1)) {
    std::size_t zeros = 0;
    while (at + marker.size() + zeros < bytes.size() && bytes[at + marker.size() + zeros] == '\0') ++zeros;
    if (zeros < 1024) continue;
    if (found != std::string::npos) return internal_error(what + " has two " + std::string(marker) + " buffers");
    found = at + marker.size();
    room = zeros;
  }
  if (found == std::string::npos)
    return internal_error(what + " has no " + std::string(marker) + " buffer: not a driver-kit fake");
  if (payload.size() + 1 > room)
    return internal_error(
        text::cat(what, ": the machine needs ", payload.size() + 1, " bytes, the library holds ", room));
  bytes.replace(found, payload.size(), payload);
  return bytes;
}

Result<> symlink_at(const std::string& target, const std::string& link) {
  ::unlink(link.c_str());
  if (::symlink(target.c_str(), link.c_str()) != 0) return sys_error("cannot create the link " + link);
  return {};
}

// lib/<stem>.so.<n> of the kit -> <libdir>/<stem>.so.<version>, its SONAME link, and libcuda.so.
Result<> write_libraries(const SimulatedMachine& m, const std::string& root, const SimDriverOptions& o) {
  const std::string version = m.inventory.driver_version, dir = fs::join_root(root, lib_dir(o.layout));
  if (auto r = fs::make_dirs(dir); !r) return r;
  for (const std::string& name : names_in(o.kit + "/lib")) {
    const std::string stem = name.substr(0, name.find(".so")), file = stem + ".so." + version;
    auto bytes = fs::read_file(o.kit + "/lib/" + name, 64u << 20);
    if (!bytes) return std::unexpected(bytes.error());
    if (stem == "libcuda") bytes = embed(*bytes, kCudaMarker, simulated_cuda_devices(m), name);
    if (stem == "libnvidia-ml") {
      if (auto r = fs::write_file_atomic(text::cat(dir, "/", stem, ".so.", kSimStaleDriverVersion), *bytes, 0755); !r)
        return r;
      bytes = embed(*bytes, kNvmlMarker, to_json(m.inventory).dump(), name);
    }
    if (!bytes) return std::unexpected(bytes.error());
    if (auto r = fs::write_file_atomic(dir + "/" + file, *bytes, 0755); !r) return r;
    auto elf = read_elf(dir + "/" + file);
    if (!elf) return std::unexpected(elf.error());
    if (elf->soname && *elf->soname != file)
      if (auto r = symlink_at(file, dir + "/" + *elf->soname); !r) return r;
    if (stem == "libcuda")
      if (auto r = symlink_at("libcuda.so.1", dir + "/libcuda.so"); !r) return r;
  }
  return {};
}

Result<> copy_program(const std::string& from, const std::string& to) {
  auto bytes = fs::read_file(from, 64u << 20);
  if (!bytes) return std::unexpected(bytes.error());
  return fs::write_file_atomic(to, *bytes, 0755);
}

// nvidia-smi and the stand-ins in the layout's bin directory; the prefix layout also gets the
// /usr/bin/nvidia-smi wrapper script its images carry (never to be mounted: it names a host path).
Result<> write_binaries(const std::string& root, const SimDriverOptions& o) {
  const std::string bin = fs::join_root(root, bin_dir(o.layout));
  if (auto r = fs::make_dirs(bin); !r) return r;
  if (auto r = copy_program(o.kit + "/bin/nvidia-smi", bin + "/nvidia-smi"); !r) return r;
  // The MPS control daemon (tests/fakes/driver/mps_control.c) runs for real: SM sharing starts it.
  if (auto r = copy_program(o.kit + "/bin/nvidia-cuda-mps-control", bin + "/nvidia-cuda-mps-control"); !r) return r;
  for (const char* name : kStandInBinaries)
    if (auto r = copy_program(o.kit + "/bin/nvidia-standin", bin + "/" + name); !r) return r;
  if (o.layout != SimDriverLayout::prefix) return {};
  const std::string usr_bin = fs::join_root(root, "/usr/bin");
  if (auto r = fs::make_dirs(usr_bin); !r) return r;
  return fs::write_file_atomic(usr_bin + "/nvidia-smi", "#!/bin/sh\nexec " + bin_dir(o.layout) + "/nvidia-smi \"$@\"\n",
                               0755);
}

// A listening-less unix socket, as nvidia-persistenced leaves (bound relative to its directory:
// sun_path is short).
Result<> make_socket(const std::string& path) {
  if (auto r = fs::make_dirs(fs::dirname(path)); !r) return r;
  ::unlink(path.c_str());
  fs::UniqueFd dir(::open(fs::dirname(path).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  fs::UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!dir || !s) return sys_error("cannot create the socket " + path);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string via = text::cat("/proc/self/fd/", dir.get(), "/", fs::basename(path));
  if (via.size() >= sizeof addr.sun_path) return internal_error("socket path too long: " + path);
  std::copy(via.begin(), via.end(), addr.sun_path);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return sys_error("cannot bind " + path);
  return {};
}

Result<> write_misc(const SimulatedMachine& m, const std::string& root) {
  const std::string version = m.inventory.driver_version;
  if (auto r = fs::make_dirs(fs::join_root(root, "/proc/driver/nvidia")); !r) return r;
  if (auto r = fs::write_file_atomic(fs::join_root(root, "/proc/driver/nvidia/version"),
                                     text::cat("NVRM version: NVIDIA UNIX x86_64 Kernel Module  ", version,
                                               "  Thu Feb 22 01:44:30 UTC 2024\nGCC version:  gcc version 12.2.0 "
                                               "(Debian 12.2.0-14)\n"));
      !r)
    return r;
  const std::string fw = fs::join_root(root, "/lib/firmware/nvidia/" + version);
  if (auto r = fs::make_dirs(fw); !r) return r;
  for (const char* name : {"gsp_ga10x.bin", "gsp_tu10x.bin"})
    if (auto r = fs::write_file_atomic(fw + "/" + name, "simulated GSP firmware\n"); !r) return r;
  return make_socket(fs::join_root(root, "/run/nvidia-persistenced/socket"));
}

// ld.so.conf naming the library directory, then the host's ldconfig run on the root (-X: the links
// are already there).
Result<> write_ld_cache(const std::string& root, SimDriverOptions o) {
  if (auto r = fs::make_dirs(fs::join_root(root, "/etc")); !r) return r;
  if (auto r = fs::write_file_atomic(fs::join_root(root, "/etc/ld.so.conf"), lib_dir(o.layout) + "\n"); !r) return r;
  ::unlink(fs::join_root(root, "/etc/ld.so.cache").c_str());
  if (o.layout == SimDriverLayout::no_cache) return {};
  const pid_t pid = ::fork();
  if (pid < 0) return sys_error("cannot fork ldconfig");
  if (pid == 0) {
    const char* argv[] = {"ldconfig", "-X", "-r", root.c_str(), nullptr};
    ::execv("/sbin/ldconfig", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return internal_error(text::cat("/sbin/ldconfig -X -r ", root, " failed (status ", status, "; it needs root)"));
  return {};
}

}  // namespace

std::string simulated_cuda_devices(const SimulatedMachine& machine) {
  HostDriverFiles files;
  files.nvidia_major = machine.majors.nvidia;
  files.caps_major = machine.majors.nvidia_caps;
  files.mig_minors = parse_mig_minors(simulated_mig_minors(machine));
  Inventory inv = machine.inventory;
  attach_device_nodes(inv, files);
  std::vector<std::string> out;
  for (const Gpu& g : inv.gpus) {
    if (!g.mig_enabled) out.push_back(text::cat(g.uuid, "=", g.memory_bytes, "@", g.node.path));
    for (const MigInstance& mi : g.mig_instances) {
      std::string nodes = g.node.path;
      for (const auto& c : mi.cap_nodes) nodes += "+" + c.path;
      out.push_back(text::cat(mi.uuid, "=", mi.memory_bytes, "@", nodes));
    }
  }
  return text::join(out, ",");
}

Result<> write_simulated_driver(const SimulatedMachine& m, const std::string& root, const SimDriverOptions& o) {
  if (auto r = write_libraries(m, root, o); !r) return std::unexpected(r.error().wrap("simulated driver"));
  if (auto r = write_binaries(root, o); !r) return std::unexpected(r.error().wrap("simulated driver"));
  if (auto r = write_misc(m, root); !r) return std::unexpected(r.error().wrap("simulated driver"));
  return write_ld_cache(root, o);
}

}  // namespace gpufrac
