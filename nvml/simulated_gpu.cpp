// Parsing of one simulated GPU and of MIG profile tables, with the checks a real driver enforces.
#include <algorithm>
#include <set>

#include "core/quantity.hpp"
#include "core/text.hpp"
#include "nvml/simulated_detail.hpp"

namespace gpufrac::sim {

using yaml::Located;

namespace {

Result<MigProfile> parse_profile(const Located& n) {
  if (auto r = yaml::check_keys(
          n, {"index", "id", "name", "compute-slices", "memory-slices", "memory-mib", "max", "placements",
              "multiprocessors", "copy-engines", "decoders", "encoders", "jpegs", "ofas", "compute-profiles"});
      !r)
    return std::unexpected(r.error());
  for (const char* required :
       {"index", "id", "name", "compute-slices", "memory-slices", "memory-mib", "max", "placements"})
    if (!n.node[required]) return n.fail(text::cat("missing key ", required));
  MigProfile p;
  GPUFRAC_TRY_ASSIGN(p.index, u32(n.child("index"), 0x11));
  GPUFRAC_TRY_ASSIGN(p.id, u32(n.child("id"), 63));
  GPUFRAC_TRY_ASSIGN(p.name, yaml::as_string(n.child("name")));
  GPUFRAC_TRY_ASSIGN(p.compute_slices, u32(n.child("compute-slices"), 8));
  GPUFRAC_TRY_ASSIGN(p.memory_slices, u32(n.child("memory-slices"), 8));
  GPUFRAC_TRY_ASSIGN(p.memory_mib, yaml::as_u64(n.child("memory-mib")));
  GPUFRAC_TRY_ASSIGN(p.max_count, u32(n.child("max"), 8));
  struct F {
    const char* key;
    std::uint32_t* target;
  };
  for (F f : {F{"multiprocessors", &p.multiprocessors}, F{"copy-engines", &p.copy_engines}, F{"decoders", &p.decoders},
              F{"encoders", &p.encoders}, F{"jpegs", &p.jpegs}, F{"ofas", &p.ofas}})
    if (n.node[f.key]) GPUFRAC_TRY_ASSIGN(*f.target, u32(n.child(f.key), 1024));
  Located pl = n.child("placements");
  if (auto r = yaml::require_sequence(pl); !r) return std::unexpected(r.error());
  for (std::size_t i = 0; i < pl.node.size(); ++i) {
    std::uint32_t start = 0;
    GPUFRAC_TRY_ASSIGN(start, u32(pl.item(i), 7));
    if (start + p.memory_slices > 8) return pl.item(i).fail("placement runs past the 8th memory slice");
    p.placement_starts.push_back(start);
  }
  if (p.compute_slices == 0 || p.memory_slices == 0 || p.memory_mib == 0 || p.max_count == 0 ||
      p.placement_starts.empty())
    return n.fail("compute-slices, memory-slices, memory-mib, max and placements must be non-zero");
  GPUFRAC_TRY_ASSIGN(p.compute_profiles, parse_compute_profiles(n.child("compute-profiles"), p));
  return p;
}

Result<> parse_cc(const Located& n, Gpu& g) {
  auto s = yaml::as_string(n);
  if (!s) return std::unexpected(s.error());
  auto parts = text::split(*s, '.');
  auto major = parts.size() == 2 ? text::parse_u64(parts[0]) : std::nullopt;
  auto minor = parts.size() == 2 ? text::parse_u64(parts[1]) : std::nullopt;
  if (!major || !minor || *major > 20 || *minor > 9) return n.fail("must be <major>.<minor>, e.g. \"8.0\"");
  g.cc_major = static_cast<int>(*major);
  g.cc_minor = static_cast<int>(*minor);
  return {};
}

Result<MigInstance> parse_instance(const Located& n, const Gpu& gpu) {
  if (auto r = yaml::check_keys(n, {"gi", "ci", "profile", "start", "uuid", "ci-start"}); !r)
    return std::unexpected(r.error());
  for (const char* required : {"gi", "profile", "start", "uuid"})
    if (!n.node[required]) return n.fail(text::cat("missing key ", required));
  MigInstance m;
  GPUFRAC_TRY_ASSIGN(m.gi_id, u32(n.child("gi"), 14));
  if (n.node["ci"]) GPUFRAC_TRY_ASSIGN(m.ci_id, u32(n.child("ci"), 7));
  GPUFRAC_TRY_ASSIGN(m.profile_name, yaml::as_string(n.child("profile")));
  GPUFRAC_TRY_ASSIGN(m.placement.start, u32(n.child("start"), 7));
  if (auto r = fill_compute_instance(n, gpu, m); !r) return std::unexpected(r.error());
  const MigProfile* p = gpu.profile_by_id(m.profile_id);
  if (std::find(p->placement_starts.begin(), p->placement_starts.end(), m.placement.start) == p->placement_starts.end())
    return n.child("start").fail(text::cat("is not a valid placement of ", p->name));
  GPUFRAC_TRY_ASSIGN(m.uuid, yaml::as_string(n.child("uuid")));
  if (!valid_uuid(m.uuid, "MIG-")) return n.child("uuid").fail("must be MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
  m.placement.size = p->memory_slices;
  m.memory_bytes = p->memory_mib * kMiB;
  return m;
}

Result<> parse_mig(const Located& n, Gpu& g, const ProfileSets& sets) {
  if (!n.node) return {};
  if (auto r = yaml::check_keys(n, {"enabled", "pending", "profiles", "instances"}); !r) return r;
  if (n.node["enabled"]) GPUFRAC_TRY_ASSIGN(g.mig_enabled, yaml::as_bool(n.child("enabled")));
  g.mig_pending = g.mig_enabled;
  if (n.node["pending"]) GPUFRAC_TRY_ASSIGN(g.mig_pending, yaml::as_bool(n.child("pending")));
  if (n.node["profiles"]) {
    auto name = yaml::as_string(n.child("profiles"));
    if (!name) return std::unexpected(name.error());
    auto it = sets.find(*name);
    if (it == sets.end()) return n.child("profiles").fail(text::quote(*name) + " is not defined under profile-sets");
    g.mig_profiles = it->second;
  }
  g.mig_capable = !g.mig_profiles.empty();
  if ((g.mig_enabled || g.mig_pending) && !g.mig_capable)
    return n.fail("MIG mode needs profiles: <name under profile-sets>");
  if (!n.node["instances"]) return {};
  Located list = n.child("instances");
  if (auto r = yaml::require_sequence(list); !r) return r;
  if (list.node.size() > 0 && !g.mig_enabled) return list.fail("MIG instances need enabled: true");
  for (std::size_t i = 0; i < list.node.size(); ++i) {
    auto m = parse_instance(list.item(i), g);
    if (!m) return std::unexpected(m.error());
    g.mig_instances.push_back(std::move(*m));
  }
  return check_instances(list, g);
}

}  // namespace

// GPU instances: placements that overlap no other GPU instance, at most max of a profile. Several
// entries with one gi are compute instances of one GPU instance (check_compute_instances).
Result<> check_instances(const Located& list, const Gpu& g) {
  if (auto r = check_compute_instances(list, g); !r) return r;
  std::set<std::uint32_t> gis;
  std::vector<const MigInstance*> firsts;
  for (std::size_t i = 0; i < g.mig_instances.size(); ++i) {
    const MigInstance& m = g.mig_instances[i];
    if (!gis.insert(m.gi_id).second) continue;
    for (const MigInstance* o : firsts)
      if (o->placement.overlaps(m.placement))
        return list.item(i).child("start").fail(text::cat("overlaps instance gi ", o->gi_id));
    firsts.push_back(&m);
    auto same = std::count_if(firsts.begin(), firsts.end(),
                              [&](const MigInstance* o) { return o->profile_id == m.profile_id; });
    if (static_cast<std::uint32_t>(same) > g.profile_by_id(m.profile_id)->max_count)
      return list.item(i).child("profile").fail("more instances of this profile than the GPU allows");
  }
  return {};
}

Result<ProfileSets> parse_profile_sets(const Located& n) {
  ProfileSets sets;
  if (!n.node) return sets;
  if (auto r = yaml::require_map(n); !r) return std::unexpected(r.error());
  for (const auto& kv : n.node) {
    Located list{kv.second, n.file, n.key + "." + kv.first.Scalar()};
    if (auto r = yaml::require_sequence(list); !r) return std::unexpected(r.error());
    auto& profiles = sets[kv.first.Scalar()];
    for (std::size_t i = 0; i < list.node.size(); ++i) {
      auto p = parse_profile(list.item(i));
      if (!p) return std::unexpected(p.error());
      profiles.push_back(std::move(*p));
    }
  }
  return sets;
}

Result<Gpu> parse_gpu(const Located& n, std::uint32_t index, const ProfileSets& sets) {
  if (auto r = yaml::check_keys(n, {"name", "uuid", "pci-bus-id", "minor", "memory-mib", "compute-capability", "mig"});
      !r)
    return std::unexpected(r.error());
  for (const char* required : {"name", "uuid", "pci-bus-id", "memory-mib", "compute-capability"})
    if (!n.node[required]) return n.fail(text::cat("missing key ", required));
  Gpu g;
  g.index = index;
  g.minor = index;
  GPUFRAC_TRY_ASSIGN(g.name, yaml::as_string(n.child("name")));
  GPUFRAC_TRY_ASSIGN(g.uuid, yaml::as_string(n.child("uuid")));
  if (!valid_uuid(g.uuid, "GPU-")) return n.child("uuid").fail("must be GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
  GPUFRAC_TRY_ASSIGN(g.pci_bus_id, yaml::as_string(n.child("pci-bus-id")));
  if (n.node["minor"]) GPUFRAC_TRY_ASSIGN(g.minor, u32(n.child("minor"), 254));
  std::uint64_t mib = 0;
  GPUFRAC_TRY_ASSIGN(mib, yaml::as_u64(n.child("memory-mib")));
  if (mib == 0 || mib > (1u << 24)) return n.child("memory-mib").fail("must be 1 to 16777216 MiB");
  g.memory_bytes = mib * kMiB;
  if (auto r = parse_cc(n.child("compute-capability"), g); !r) return std::unexpected(r.error());
  if (auto r = parse_mig(n.child("mig"), g, sets); !r) return std::unexpected(r.error());
  return g;
}

}  // namespace gpufrac::sim
