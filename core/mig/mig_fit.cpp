#include "core/mig/mig_fit.hpp"

#include <algorithm>
#include <array>

#include "core/mig/mig_profile_name.hpp"
#include "core/quantity.hpp"

namespace gpufrac {

namespace {

using Key = std::array<std::uint64_t, 8>;

bool attributed(const MigProfile& p) {
  return p.name.find_first_of("+-") != std::string::npos;
}

// A whole GPU instance holds the request's memory: the slice rule for a fraction, memorySizeMB for
// an amount (docs/architecture.md "Requests and allocation").
bool whole_holds(const Request& r, const Gpu& g, const MigProfile& p) {
  const std::uint64_t slices = g.memory_slices();
  if (r.kind == SizeKind::memory) return p.memory_mib * kMiB >= r.memory_bytes;
  const std::uint64_t need = (static_cast<std::uint64_t>(r.fraction) * slices + kWholeGpuPpm - 1) / kWholeGpuPpm;
  return slices > 0 && p.memory_slices >= need;
}

Key memory_key(const Request& r, const MigProfile& p) {
  const std::uint64_t a = attributed(p);
  if (r.kind == SizeKind::memory) return {a, p.memory_mib, p.memory_slices, p.compute_slices, p.index, 0, 0, 0};
  return {a, p.memory_slices, p.memory_mib, p.compute_slices, p.index, 0, 0, 0};
}

// What a share request books of a smaller compute instance's GI: its amount, or its fraction of
// the GPU's memory.
std::uint64_t share_bytes(const Request& r, const Gpu& g) {
  return r.kind == SizeKind::memory ? r.memory_bytes : fraction_bytes(g.memory_bytes, r.fraction);
}

std::optional<std::pair<Key, MigCandidate>> named(const Request& r, const MigShape& s) {
  if (canonical_mig_profile_or_same(s.name()) != r.mig_profile) return std::nullopt;
  const std::uint64_t bytes = s.full()         ? gi_memory_bytes(*s.gi)
                              : r.memory_bytes ? r.memory_bytes
                                               : equal_split_bytes(s);
  if (bytes > gi_memory_bytes(*s.gi)) return std::nullopt;
  return std::pair{Key{}, MigCandidate{s, bytes}};
}

std::optional<std::pair<Key, MigCandidate>> by_compute(const Request& r, const Gpu& g, const MigShape& s) {
  const std::uint32_t sms = s.ci.multiprocessors;
  if (sms == 0 || sms < multiprocessors_for(g, *r.compute_ppm)) return std::nullopt;
  const MigProfile& p = *s.gi;
  const Key k{attributed(p), sms, p.memory_mib, p.memory_slices, p.compute_slices, !s.full(), p.index, s.ci.slices};
  if (s.full()) {
    if (!whole_holds(r, g, p)) return std::nullopt;
    return std::pair{k, MigCandidate{s, gi_memory_bytes(p)}};
  }
  const std::uint64_t bytes = share_bytes(r, g);
  if (bytes == 0 || bytes > gi_memory_bytes(p)) return std::nullopt;
  return std::pair{k, MigCandidate{s, bytes}};
}

}  // namespace

bool takes_compute_instances(const Request& r) {
  return r.kind == SizeKind::mig_profile || r.compute_ppm.has_value();
}

std::vector<MigCandidate> mig_candidates(const Request& r, const Gpu& g) {
  std::vector<std::pair<Key, MigCandidate>> fits;
  std::vector<MigShape> shapes = mig_shapes(g);
  if (r.kind == SizeKind::mig_profile)
    if (auto s = mig_shape_named(g, r.mig_profile);
        s && std::none_of(shapes.begin(), shapes.end(),
                          [&](const MigShape& o) { return o.gi == s->gi && o.ci.slices == s->ci.slices; }))
      shapes.push_back(std::move(*s));
  for (const MigShape& s : shapes) {
    std::optional<std::pair<Key, MigCandidate>> fit;
    if (r.kind == SizeKind::mig_profile)
      fit = named(r, s);
    else if (r.compute_ppm)
      fit = by_compute(r, g, s);
    else if (s.full() && whole_holds(r, g, *s.gi))
      fit = std::pair{memory_key(r, *s.gi), MigCandidate{s, gi_memory_bytes(*s.gi)}};
    if (fit) fits.push_back(std::move(*fit));
  }
  std::stable_sort(fits.begin(), fits.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<MigCandidate> out;
  for (auto& f : fits) out.push_back(std::move(f.second));
  return out;
}

std::uint64_t gi_booked_bytes(const std::vector<LedgerEntry>& live, const std::string& gpu_uuid, std::uint32_t gi) {
  std::uint64_t sum = 0;
  for (const LedgerEntry& e : live)
    if (e.mig && e.gpu_uuid == gpu_uuid && e.mig->gi == gi) sum = saturating_add(sum, e.bytes);
  return sum;
}

std::vector<std::pair<std::string, std::uint32_t>> held_gpu_instances(const std::vector<LedgerEntry>& live,
                                                                      const MigHolder& h) {
  std::vector<std::pair<std::string, std::uint32_t>> out;
  if (h.empty()) return out;
  for (const LedgerEntry& e : live)
    if (e.mig && e.container_id == h.container_id && e.instance == h.instance && e.claim_owned() == h.claim)
      out.emplace_back(e.gpu_uuid, e.mig->gi);
  return out;
}

}  // namespace gpufrac
