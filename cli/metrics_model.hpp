// `gpufrac metrics` as data: the node (cli/node_view.hpp) and the front-ends' counter file
// (metrics/counter_file.hpp) as Prometheus families. Pure: the same input gives the same text.
// Series (docs/architecture.md "Metrics"; every one used by etc/grafana/gpufrac.json):
//   gpufrac_build_info{version}                                   1
//   gpufrac_gpu_info{gpu_index,gpu_uuid,name,mig_mode}            1 per GPU
//   gpufrac_gpu_memory_{total,reserved,free}_bytes{gpu_index,gpu_uuid,device_uuid}
//   gpufrac_gpu_shares{gpu_index,gpu_uuid,device_uuid}            bookings on the device
//       per device that holds shares: a GPU not in MIG mode (device_uuid = gpu_uuid) or a MIG
//       instance (device_uuid = MIG-...); a GPU in MIG mode has only gpu_info and mig_instances
//   gpufrac_share_{request,limit,used}_bytes{gpu_index,gpu_uuid,device_uuid,container_id,device_key,request,enforcement}
//       per booking: what it books, the most it may use (its burst limit, else what it books); used
//       only where the container's accounting region (or, where it holds the limit, the driver) says
//       (not when pending); enforcement: driver, shim or mig
//   gpufrac_share_borrowed_bytes{<share labels>}                  a share with a burst limit: used past its request
//   gpufrac_share_reclaims_total{<share labels>}                  its processes the reclaimer stopped
//   gpufrac_share_swap_outs_total{<share labels>}                 burst.reclaim: swap: times its processes were swapped
//   out gpufrac_share_swap_ins_total{<share labels>}                  ... and swapped back in
//   gpufrac_share_swapped_out_bytes_total{<share labels>}         bytes moved to host memory (swap_in for back)
//   gpufrac_share_swapped_in_bytes_total{<share labels>}
//   gpufrac_share_swapped_bytes{<share labels>}                   its bytes in host memory now (0 when not swapped)
//   gpufrac_gpu_reclaims_total{gpu_index,gpu_uuid}                borrowers' processes stopped on the GPU
//   gpufrac_gpu_swap_outs_total{gpu_index,gpu_uuid}               borrowers' processes swapped out on the GPU
//   gpufrac_gpu_reclaims_refused_total{gpu_index,gpu_uuid}        requests for lent memory refused (burst.reclaim:
//   refuse) gpufrac_gpu_compute_{booked,free}_ratio{gpu_index,gpu_uuid,device_uuid}
//       the GPU's time booked by its shares and still free (0 to 1), per GPU not in MIG mode
//   gpufrac_share_compute_booked_ratio{<share labels>}            per booking with a compute share
//   gpufrac_share_compute_achieved_ratio{<share labels>}          its time over the last 10 s, where known
//   gpufrac_mig_instances{gpu_index,gpu_uuid,state}               in_use, idle (kept for reuse), free
//   gpufrac_refusals_total{frontend,reason}                       hook|wrapper x capacity|malformed|host_pid|other
//   gpufrac_hook_duration_seconds{stage}                          histogram: prestart, createRuntime, poststop
//   gpufrac_wrapper_duration_seconds                              histogram: gpufrac-runtime create
//   gpufrac_ledger_entries, gpufrac_ledger_size_bytes
#pragma once

#include <string_view>
#include <vector>

#include "cli/node_view.hpp"
#include "metrics/counter_file.hpp"
#include "metrics/exposition.hpp"

namespace gpufrac::cli {

std::vector<metrics::Family> node_metrics(const NodeView& node, const metrics::CounterSnapshot& counters,
                                          std::string_view version);

}  // namespace gpufrac::cli
