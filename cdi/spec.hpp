// The CDI spec `gpufrac cdi generate` writes, built from the inventory by the planner (never by
// computing nodes or mounts here) and the device-name mapping the hook uses to book:
//  - spec-level containerEdits (applied once per container, whatever devices it asks for): the
//    control nodes and the static preload file;
//  - per device: its own device nodes, informational env, a createRuntime hook per booking
//    (`gpufrac-hook createRuntime --cdi-device <name>`, which also mounts gpufrac's directory: the
//    tmpfs at /run/gpufrac with the shim, limits and usage) and a poststop hook, each with an explicit
//    env (plan_hook). Every device books in the ledger, whole GPUs and MIG instances included, so
//    CDI never hands out a GPU whose shares are booked; "all" carries one hook per member.
// Devices are in inventory order: per GPU (index order) the whole GPU by index and by UUID, its
// fraction shares (ascending), its memory shares (ascending); per MIG instance <gpu>:<mig> and
// MIG-<uuid>; then "all". The same inventory and config give the same spec, byte for byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.hpp"
#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/plan/edits.hpp"

namespace gpufrac::cdi {

struct Device {
  std::string name;
  Edits edits;
};

struct Spec {
  std::string kind;
  Edits common;  // spec-level containerEdits
  std::vector<Device> devices;
};

struct Built {
  Spec spec;
  std::vector<std::string> warnings;  // devices left out, one line each
};

// Fails when the planner cannot give the common nodes (driver majors unknown). A device the
// allocator could not grant on an empty node (a MIG instance without capability nodes, a memory
// share larger than its GPU) is left out with a warning.
Result<Built> build_spec(const Inventory& inventory, const Config& config, std::string_view kind);

// The static preload file every CDI container gets as /etc/ld.so.preload (the shim only), and
// where generate writes it.
std::string cdi_preload_path(const Config& config);
std::string cdi_preload_content();

// The spec as JSON with the exact CDI keys in canonical order, cdiVersion = the minimum it needs.
nlohmann::ordered_json spec_json(const Spec& spec);

// The comment generate writes at the top of a YAML spec (JSON has none).
inline constexpr const char* kSpecHeader =
    "CDI spec written by `gpufrac cdi generate`; regenerate it rather than editing it.\n"
    "Devices: gpufrac cdi list. Check: gpufrac cdi validate FILE.";

}  // namespace gpufrac::cdi
