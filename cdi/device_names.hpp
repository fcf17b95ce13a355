// gpufrac's CDI device names (kind gpufrac.io/gpu) and the Request each one books. The one grammar
// for `gpufrac cdi generate` (which names devices), gpufrac-hook --cdi-device (which books them)
// and gpufrac-runtime (cdi.k8s.io/* annotations naming gpufrac.io/gpu=... devices):
//
//   <gpu>             whole GPU by index, e.g. 0          -> fraction=1 gpu=<gpu>
//   GPU-<uuid>        whole GPU by UUID                   -> fraction=1 gpu=GPU-<uuid>
//   <gpu>:<mig>       MIG device by position in the GPU's list of them (by GI, CI: each compute
//                     instance is one, so the three of a GPU instance split 1c x3 are three
//                     positions; NVIDIA's toolkit names them the same way)
//                                                         -> mig-profile=<profile> gpu=MIG-<uuid>
//                     (<profile>: "3g.40gb" for a whole GPU instance, "1c.3g.40gb" for a compute
//                     instance of one, which books the equal split of its GPU instance's memory)
//   MIG-<uuid>        MIG instance by UUID                 -> the same
//   <gpu>-<fraction>  share, canonical fraction < 1, e.g. 0-0.25       -> fraction=<f> gpu=<gpu>
//   <gpu>-<memory>    share, canonical memory < the GPU's, e.g. 0-4Gi  -> memory=<m> gpu=<gpu>
//   <gpu>-sm<percent> SM share (an MPS client, docs/architecture.md "SM sharing"), e.g. 0-sm30
//                                                     -> compute=<p> compute-mode=sm gpu=<gpu>
//   all               every whole GPU not in MIG mode and every MIG instance (of a GPU instance
//                     split into compute instances, its first: a container gets one compute
//                     instance per GPU instance): a set, booked as its members
//                     (cdi_device_members), never as one Request
//
// <gpu> is a decimal index without leading zeros. A GPU in MIG mode has no whole-GPU or share
// devices: its memory belongs to its instances. Canonical forms keep one name per device:
// fractions as format_fraction prints them, memory with the largest suffix that divides it exactly
// (Ti, Gi, T, G, Mi, M, Ki, k).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/inventory/inventory.hpp"
#include "core/quantity.hpp"
#include "core/request/request.hpp"

namespace gpufrac::cdi {

inline constexpr std::string_view kAllDevice = "all";

// The Request a device books. `name` is the device name, or the fully qualified
// gpufrac.io/gpu=<name>. Refusals (exit 1) are one line: the quoted name, the problem, the forms.
Result<Request> request_for_cdi_device(std::string_view name, const Inventory& inventory);

// The device names a CDI device books in the ledger, one booking each (the ledger's device key):
// {name} for a single device, every member for "all" (whole GPUs by index, then MIG instances as
// <gpu>:<mig>, one per GPU instance), in inventory order. Errors as request_for_cdi_device.
Result<std::vector<std::string>> cdi_device_members(std::string_view name, const Inventory& inventory);

// Names generate gives devices.
std::string whole_gpu_name(const Gpu& gpu);
std::string mig_name(const Gpu& gpu, std::size_t position);
std::string fraction_share_name(const Gpu& gpu, Ppm fraction);
std::string sm_share_name(const Gpu& gpu, std::uint32_t percent);
// nullopt when no suffix divides the amount exactly (no canonical name: generate skips it).
std::optional<std::string> memory_share_name(const Gpu& gpu, std::uint64_t bytes);

}  // namespace gpufrac::cdi
