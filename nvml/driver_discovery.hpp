// Finding the NVIDIA driver's user space on the host, once per inventory refresh (never on the
// container-start path): the libraries of exactly the loaded driver version and their links, the
// binaries, the GSP firmware and the IPC sockets, as containers must see them. Everything is looked
// up beneath <host-root><driver.root> with symlinks resolved inside that root (a driver container's
// tree cannot point gpufrac at the host's files), and container paths are canonical for merged-/usr
// images (/lib -> /usr/lib, /var/run -> /run). docs/architecture.md "The driver's user space".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"

namespace gpufrac {

// The version in /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module
// 550.54.15 ..." or "... Open Kernel Module for x86_64  550.54.15  Release Build ...").
std::optional<std::string> parse_kernel_module_version(std::string_view text);

// /lib/x -> /usr/lib/x, /lib64 -> /usr/lib64, /bin -> /usr/bin, /sbin -> /usr/sbin, /var/run -> /run.
std::string canonical_container_path(std::string_view path);

// Checks NVML's driver version against <host-root>/proc/driver/nvidia/version (when present; a
// mismatch is an error naming both), then finds the driver's files for that version. Nothing (not
// an error) when no library of that version is there; missing_driver_files() says so in one line.
Result<std::optional<DriverFiles>> discover_driver_files(const Config& cfg, const std::string& nvml_version);
Error missing_driver_files(const Config& cfg, const std::string& version);

// Sets inv.driver for inv.driver_version unless driver.inject is never. Missing files are an error
// when `required` (a real NVML node) or with driver.inject: always; a simulated machine whose host
// root has no driver tree gets none (its containers get no driver files).
Result<> attach_driver_files(const Config& cfg, Inventory& inv, bool required);

}  // namespace gpufrac
