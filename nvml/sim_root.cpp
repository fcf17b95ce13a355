#include "nvml/sim_root.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <set>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "nvml/device_nodes.hpp"

namespace gpufrac {

namespace {

// Observed driver layout (reference nvml-and-mig.md §5): gi access = 3 + 135*M + 9*G,
// ci access = gi + 1 + C, for G in 0..14 and C in 0..7. Consumers parse the file, never this formula.
constexpr std::int64_t gi_minor(std::uint32_t m, std::uint32_t g) {
  return 3 + 135 * m + 9 * g;
}

Result<> make_char_node(const std::string& path, std::int64_t major, std::int64_t minor) {
  if (auto r = fs::make_dirs(fs::dirname(path)); !r) return r;
  ::unlink(path.c_str());
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)) != 0) return sys_error("cannot mknod " + path);
  return {};
}

}  // namespace

std::string simulated_proc_devices(const SimulatedMajors& m) {
  return text::cat("Character devices:\n  1 mem\n  4 /dev/vc/0\n  5 /dev/tty\n", m.nvidia, " nvidia-frontend\n",
                   m.nvidia_uvm, " nvidia-uvm\n", m.nvidia_caps, " nvidia-caps\n\nBlock devices:\n  7 loop\n");
}

std::string simulated_mig_minors(const SimulatedMachine& machine) {
  std::string out = "config 1\nmonitor 2\n";
  for (const auto& g : machine.inventory.gpus) {
    for (std::uint32_t gi = 0; gi < 15; ++gi) {
      out += text::cat(mig_gi_cap_key(g.minor, gi), " ", gi_minor(g.minor, gi), "\n");
      for (std::uint32_t ci = 0; ci < 8; ++ci)
        out += text::cat(mig_ci_cap_key(g.minor, gi, ci), " ", gi_minor(g.minor, gi) + 1 + ci, "\n");
    }
  }
  return out;
}

// The driver's procfs directory of a GPU: its bus id with a 4-digit domain, lower case
// ("00000000:07:00.0" -> "0000:07:00.0").
static std::string proc_gpu_dir(const Gpu& g) {
  std::string bus = g.pci_bus_id.size() > 12 ? g.pci_bus_id.substr(g.pci_bus_id.size() - 12) : g.pci_bus_id;
  for (char& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return bus;
}

static std::string proc_gpu_information(const Gpu& g) {
  return text::cat("Model: \t\t ", g.name, "\nIRQ:   \t\t 0\nGPU UUID: \t ", g.uuid,
                   "\nVideo BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\nDMA Size: \t 47 bits\n"
                   "DMA Mask: \t 0x7fffffffffff\nBus Location: \t ",
                   proc_gpu_dir(g), "\nDevice Minor: \t ", g.minor, "\nGPU Excluded:\t No\n");
}

// Removes the entries of `dir` whose names are `stale` (what an earlier root for another machine
// left: its GPUs' nodes and procfs directories).
static Result<> remove_stale(const std::string& dir, const std::function<bool(const std::string&)>& stale) {
  std::error_code ec;
  std::vector<std::filesystem::path> gone;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (stale(e.path().filename().string())) gone.push_back(e.path());
  if (ec && ec != std::errc::no_such_file_or_directory) return sys_error("cannot read " + dir, ec.value());
  for (const auto& p : gone)
    if (std::filesystem::remove_all(p, ec); ec) return sys_error("cannot remove " + p.string(), ec.value());
  return {};
}

// /proc/driver/nvidia/gpus/<bus id>/information for each GPU, as the driver lists them.
static Result<> write_proc_gpus(const SimulatedMachine& machine, const std::string& root) {
  const std::string dir = fs::join_root(root, "/proc/driver/nvidia/gpus");
  std::set<std::string> names;
  for (const auto& g : machine.inventory.gpus) names.insert(proc_gpu_dir(g));
  if (auto r = remove_stale(dir, [&](const std::string& n) { return !names.contains(n); }); !r) return r;
  for (const auto& g : machine.inventory.gpus) {
    if (auto r = fs::make_dirs(dir + "/" + proc_gpu_dir(g)); !r) return r;
    if (auto r = fs::write_file_atomic(dir + "/" + proc_gpu_dir(g) + "/information", proc_gpu_information(g)); !r)
      return r;
  }
  return {};
}

// /dev/nvidia<N> and /dev/nvidia-caps/nvidia-cap<N> nodes this machine does not have.
static Result<> remove_stale_nodes(const SimulatedMachine& machine, const std::string& root) {
  std::set<std::string> gpus, caps;
  for (const auto& g : machine.inventory.gpus) {
    gpus.insert(text::cat("nvidia", g.minor));
    if (!g.mig_enabled) continue;
    for (std::uint32_t gi = 0; gi < 15; ++gi)
      for (std::int64_t minor = gi_minor(g.minor, gi); minor <= gi_minor(g.minor, gi) + 8; ++minor)
        caps.insert(text::cat("nvidia-cap", minor));
  }
  auto numbered = [](const std::string& n, std::string_view prefix) {
    return n.size() > prefix.size() && n.starts_with(prefix) &&
           n.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
  };
  if (auto r = remove_stale(fs::join_root(root, "/dev"),
                            [&](const std::string& n) { return numbered(n, "nvidia") && !gpus.contains(n); });
      !r)
    return r;
  return remove_stale(fs::join_root(root, "/dev/nvidia-caps"),
                      [&](const std::string& n) { return numbered(n, "nvidia-cap") && !caps.contains(n); });
}

static Result<> make_nodes(const SimulatedMachine& machine, const std::string& root) {
  const auto& mj = machine.majors;
  for (auto [path, major, minor] :
       {std::tuple<const char*, std::int64_t, std::int64_t>{"/dev/nvidiactl", mj.nvidia, 255},
        {"/dev/nvidia-uvm", mj.nvidia_uvm, 0},
        {"/dev/nvidia-uvm-tools", mj.nvidia_uvm, 1}})
    if (auto r = make_char_node(fs::join_root(root, path), major, minor); !r) return r;
  for (const auto& g : machine.inventory.gpus) {
    if (auto r = make_char_node(fs::join_root(root, text::cat("/dev/nvidia", g.minor)), mj.nvidia, g.minor); !r)
      return r;
    if (!g.mig_enabled) continue;
    for (std::uint32_t gi = 0; gi < 15; ++gi)
      for (std::int64_t minor = gi_minor(g.minor, gi); minor <= gi_minor(g.minor, gi) + 8; ++minor)
        if (auto r = make_char_node(fs::join_root(root, text::cat("/dev/nvidia-caps/nvidia-cap", minor)),
                                    mj.nvidia_caps, minor);
            !r)
          return r;
  }
  return {};
}

Result<> write_simulated_host_root(const SimulatedMachine& machine, const std::string& root, bool nodes) {
  if (auto r = fs::make_dirs(fs::join_root(root, "/proc/driver/nvidia-caps")); !r) return r;
  if (auto r = fs::write_file_atomic(fs::join_root(root, "/proc/devices"), simulated_proc_devices(machine.majors)); !r)
    return r;
  if (auto r = fs::write_file_atomic(fs::join_root(root, "/proc/driver/nvidia-caps/mig-minors"),
                                     simulated_mig_minors(machine));
      !r)
    return r;
  if (auto r = write_proc_gpus(machine, root); !r) return r;
  if (auto r = remove_stale_nodes(machine, root); !r) return r;
  if (!nodes) return {};
  return make_nodes(machine, root);
}

}  // namespace gpufrac
