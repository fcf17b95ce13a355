#include "nvml/mig_session.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "nvml/inventory_cache.hpp"

namespace gpufrac {

std::string mig_lock_path(const Config& cfg, const std::string& gpu_uuid) {
  return cfg.state_dir + "/mig-" + gpu_uuid + ".lock";
}

std::string mig_journal_path(const Config& cfg, const std::string& gpu_uuid) {
  return cfg.state_dir + "/mig-" + gpu_uuid + ".journal";
}

Result<MigGpuLock> MigGpuLock::acquire(const Config& cfg, const std::string& gpu_uuid) {
  if (auto r = fs::make_dirs(cfg.state_dir, 0755); !r) return std::unexpected(r.error());
  const std::string path = mig_lock_path(cfg, gpu_uuid);
  fs::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return sys_error("cannot open MIG lock " + path);
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sys_error("cannot lock " + path);
  return MigGpuLock(std::move(fd));
}

Result<> write_mig_journal(const Config& cfg, const MigJournal& j) {
  nlohmann::json doc{{"op", "create"},       {"gpu", j.gpu_uuid}, {"profile_id", j.profile_id},
                     {"profile", j.profile}, {"start", j.start},  {"container", j.container},
                     {"time", j.time}};
  if (j.gi) {
    doc["gi"] = *j.gi;
    doc["cis_before"] = j.cis_before;
  }
  return fs::write_file_atomic(mig_journal_path(cfg, j.gpu_uuid), doc.dump() + "\n", 0600);
}

Result<std::optional<MigJournal>> read_mig_journal(const Config& cfg, const std::string& gpu_uuid) {
  const std::string path = mig_journal_path(cfg, gpu_uuid);
  auto text = fs::read_file(path, 64u << 10);
  if (!text) {
    if (text.error().err == ENOENT) return std::optional<MigJournal>();
    return std::unexpected(text.error());
  }
  try {
    auto doc = nlohmann::json::parse(*text);
    if (doc.at("op") != "create" || doc.at("gpu") != gpu_uuid) throw std::runtime_error("another GPU or operation");
    MigJournal j{gpu_uuid,
                 doc.at("profile_id").get<std::uint32_t>(),
                 doc.at("profile").get<std::string>(),
                 doc.at("start").get<std::uint32_t>(),
                 doc.at("container").get<std::string>(),
                 doc.at("time").get<std::int64_t>()};
    if (doc.contains("gi")) {
      j.gi = doc.at("gi").get<std::uint32_t>();
      j.cis_before = doc.at("cis_before").get<std::vector<std::uint32_t>>();
    }
    return std::optional<MigJournal>(std::move(j));
  } catch (const std::exception& e) {
    return internal_error(text::cat(path, ": not a gpufrac MIG journal (", e.what(), "); remove it after checking ",
                                    "nvidia-smi mig -lgi for a GPU instance without compute instance"));
  }
}

Result<> remove_mig_journal(const Config& cfg, const std::string& gpu_uuid) {
  const std::string path = mig_journal_path(cfg, gpu_uuid);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return sys_error("cannot remove " + path);
  return {};
}

Result<MigDriver> MigDriver::open(const Config& cfg) {
  if (uses_simulated_machine(cfg))
    return user_error(
        "dynamic MIG needs the NVML backend: a simulated machine file cannot change; set nvml: "
        "{backend: nvml} (tests use the fake libnvidia-ml.so.1) or mig.mode static");
  auto lib = nvml::Library::open(cfg.nvml.library);
  if (!lib) return std::unexpected(lib.error());
  if (auto r = lib->init(); !r) return std::unexpected(r.error());
  return MigDriver(std::make_unique<nvml::Library>(std::move(*lib)));
}

MigDriver::~MigDriver() {
  if (lib_) lib_->fn().nvmlShutdown();
}

}  // namespace gpufrac
