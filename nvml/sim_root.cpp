#include "nvml/sim_root.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

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
  if (!nodes) return {};
  return make_nodes(machine, root);
}

}  // namespace gpufrac
