#include "hook/driver_step.hpp"

#include "core/fs.hpp"
#include "core/text.hpp"
#include "hook/ld_cache_update.hpp"
#include "hook/ns_apply.hpp"
#include "hook/privileges.hpp"
#include "state/container_mount.hpp"

namespace gpufrac::hook {

namespace {

// Binds the private cache read-only over the container's /etc/ld.so.cache.
Result<> bind_private_cache(const Config& cfg, const bundle::OciState& state, const bundle::BundleSpec& spec,
                            const std::string& key, const std::string& bytes) {
  const std::string dir = cfg.container_dir(key);
  if (auto r = fs::make_dirs(dir, 0755); !r) return r;
  const std::string path = dir + "/ld.so.cache";
  if (auto r = grow_container_dir(cfg, key, bytes.size()); !r) return r;  // the tmpfs's room for it
  if (auto r = fs::write_file_atomic(path, bytes, 0644); !r) return r;
  Edits edits;
  edits.mounts.push_back({path, "/etc/ld.so.cache", "bind", {"ro", "nosuid", "nodev", "noexec", "bind"}});
  auto prepared = prepare_mounts(edits);
  if (!prepared) return std::unexpected(prepared.error());
  NamespaceTarget target{text::cat(cfg.proc_root, "/", *state.pid, "/ns/mnt"), spec.rootfs};
  return attach_in_namespace(target, *prepared);
}

}  // namespace

Result<std::vector<std::string>> parse_ld_cache_dirs(std::string_view value) {
  std::vector<std::string> dirs;
  for (const auto& d : text::split(value, ':')) {
    if (d.empty() || d.front() != '/' || d.find("/..") != std::string::npos || d.find('\n') != std::string::npos)
      return user_error(text::cat("--ld-cache: ", text::quote(d),
                                  " is not an absolute directory; the form is DIR[:DIR...], e.g. "
                                  "/usr/lib/x86_64-linux-gnu"));
    dirs.push_back(d);
  }
  if (dirs.empty()) return user_error("--ld-cache: no directory; the form is DIR[:DIR...]");
  return dirs;
}

Result<bool> refresh_ld_cache(const Config& cfg, const bundle::OciState& state, const bundle::BundleSpec& spec,
                              const std::string& container_key, const std::vector<std::string>& driver_dirs) {
  if (!state.pid) return user_error("the OCI state on stdin has no pid; --ld-cache runs at createRuntime");
  if (auto r = set_effective(kApplyCapabilities); !r) return std::unexpected(r.error());
  LdCacheJob job{text::cat(cfg.proc_root, "/", *state.pid, "/ns/mnt"), spec.rootfs, driver_dirs, spec.read_only_root};
  auto outcome = update_container_ld_cache(job);
  if (!outcome) return std::unexpected(outcome.error());
  if (outcome->in_place) return true;
  if (auto r = bind_private_cache(cfg, state, spec, container_key, outcome->bytes); !r)
    return std::unexpected(r.error());
  return false;
}

}  // namespace gpufrac::hook
