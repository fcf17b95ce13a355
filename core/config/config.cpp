#include "core/config/config.hpp"

#include <cstdlib>

#include "core/build_info.hpp"
#include "core/config/config_trust.hpp"
#include "core/config/yaml_util.hpp"
#include "core/fs.hpp"

namespace gpufrac {

using yaml::Located;

std::string Config::host_path(const std::string& absolute) const {
  return fs::join_root(host_root, absolute);
}

MigMode MigConfig::mode_for(std::uint32_t index, const std::string& uuid) const {
  if (auto it = gpus.find(uuid); it != gpus.end()) return it->second;
  if (auto it = gpus.find(std::to_string(index)); it != gpus.end()) return it->second;
  return mode;
}

const char* to_string(Policy p) {
  return p == Policy::spread ? "spread" : "binpack";
}
const char* to_string(MigMode m) {
  return m == MigMode::dynamic ? "dynamic" : "static";
}

const char* to_string(DriverInject d) {
  return d == DriverInject::always ? "always" : d == DriverInject::never ? "never" : "auto";
}

const char* to_string(ComputeManagement c) {
  return c == ComputeManagement::unmanaged ? "unmanaged" : "managed";
}

const char* to_string(Enforcement e) {
  return e == Enforcement::driver ? "driver" : e == Enforcement::shim ? "shim" : "auto";
}

const char* to_string(BurstReclaim r) {
  return r == BurstReclaim::refuse ? "refuse" : r == BurstReclaim::swap ? "swap" : "kill";
}

const char* to_string(UnknownNames u) {
  return u == UnknownNames::warn ? "warn" : "refuse";
}

Config default_config() {
  Config c;
  c.shim_path = std::string(build::kShimDir) + "/libgpufrac-limits.so";
  c.hook_path = std::string(build::kBinDir) + "/gpufrac-hook";
  c.cli_path = std::string(build::kBinDir) + "/gpufrac";
  return c;
}

namespace {

// Paths in a config file may be relative to the file's directory (handy for fixtures).
std::string resolve_path(const std::string& value, const std::string& config_file) {
  if (value.empty() || value.front() == '/') return value;
  return fs::dirname(config_file) + "/" + value;
}

Result<std::string> path_value(const Located& n) {
  auto s = yaml::as_string(n);
  if (!s) return s;
  if (s->empty()) return n.fail("must not be empty");
  if (s->find('\0') != std::string::npos) return n.fail("must not contain NUL");
  return resolve_path(*s, n.file);
}

Result<> parse_nvml(const Located& n, NvmlConfig& out) {
  if (auto r = yaml::check_keys(n, {"backend", "machine", "library"}); !r) return r;
  if (n.node["backend"]) {
    auto b = yaml::as_choice(n.child("backend"), {"auto", "nvml", "simulated"});
    if (!b) return std::unexpected(b.error());
    out.backend = *b == "nvml"        ? NvmlBackend::nvml
                  : *b == "simulated" ? NvmlBackend::simulated
                                      : NvmlBackend::auto_detect;
  }
  if (n.node["machine"]) GPUFRAC_TRY_ASSIGN(out.machine, path_value(n.child("machine")));
  if (n.node["library"]) GPUFRAC_TRY_ASSIGN(out.library, yaml::as_string(n.child("library")));
  if (out.backend == NvmlBackend::simulated && out.machine.empty())
    return n.fail("backend simulated needs machine: <file>");
  return {};
}

Result<> parse_driver(const Located& n, DriverConfig& out) {
  if (auto r = yaml::check_keys(n, {"inject", "root"}); !r) return r;
  if (n.node["inject"]) {
    auto v = yaml::as_choice(n.child("inject"), {"auto", "always", "never"});
    if (!v) return std::unexpected(v.error());
    out.inject = *v == "always"  ? DriverInject::always
                 : *v == "never" ? DriverInject::never
                                 : DriverInject::auto_detect;
  }
  if (n.node["root"]) {
    auto v = yaml::as_string(n.child("root"));
    if (!v) return std::unexpected(v.error());
    if (v->empty() || v->front() != '/' || v->find("/../") != std::string::npos || v->ends_with("/.."))
      return n.child("root").fail("must be an absolute path without .., e.g. / or /run/nvidia/driver");
    out.root = *v;
  }
  return {};
}

Result<> parse_allocation(const Located& n, AllocationConfig& out) {
  if (auto r = yaml::check_keys(
          n, {"policy", "overcommit", "max-shares-per-gpu", "mig-serves-fractions", "pending-timeout", "compute"});
      !r)
    return r;
  if (n.node["policy"]) {
    auto p = yaml::as_choice(n.child("policy"), {"binpack", "spread"});
    if (!p) return std::unexpected(p.error());
    out.policy = *p == "spread" ? Policy::spread : Policy::binpack;
  }
  if (n.node["overcommit"]) {
    GPUFRAC_TRY_ASSIGN(out.overcommit, yaml::as_double(n.child("overcommit")));
    if (out.overcommit < 1.0 || out.overcommit > 16.0)
      return n.child("overcommit").fail("must be between 1.0 and 16.0 (1.0 = no overcommit)");
  }
  if (n.node["max-shares-per-gpu"]) {
    std::uint64_t v = 0;
    GPUFRAC_TRY_ASSIGN(v, yaml::as_u64(n.child("max-shares-per-gpu")));
    if (v > 1024) return n.child("max-shares-per-gpu").fail("must be 0 (unlimited) to 1024");
    out.max_shares_per_gpu = static_cast<std::uint32_t>(v);
  }
  if (n.node["mig-serves-fractions"])
    GPUFRAC_TRY_ASSIGN(out.mig_serves_fractions, yaml::as_bool(n.child("mig-serves-fractions")));
  if (n.node["pending-timeout"]) {
    std::uint64_t v = 0;
    GPUFRAC_TRY_ASSIGN(v, yaml::as_u64(n.child("pending-timeout")));
    if (v < 5 || v > 86400) return n.child("pending-timeout").fail("must be 5 to 86400 seconds");
    out.pending_timeout_s = static_cast<std::uint32_t>(v);
  }
  if (n.node["compute"]) {
    auto c = yaml::as_choice(n.child("compute"), {"managed", "unmanaged"});
    if (!c) return std::unexpected(c.error());
    out.compute = *c == "unmanaged" ? ComputeManagement::unmanaged : ComputeManagement::managed;
  }
  return {};
}

Result<MigMode> mig_mode_value(const Located& n) {
  auto m = yaml::as_choice(n, {"static", "dynamic"});
  if (!m) return std::unexpected(m.error());
  return *m == "dynamic" ? MigMode::dynamic : MigMode::static_;
}

Result<> parse_mig(const Located& n, MigConfig& out) {
  if (auto r = yaml::check_keys(n, {"mode", "gpus", "idle-timeout"}); !r) return r;
  if (n.node["mode"]) GPUFRAC_TRY_ASSIGN(out.mode, mig_mode_value(n.child("mode")));
  if (n.node["idle-timeout"]) {
    std::uint64_t v = 0;
    GPUFRAC_TRY_ASSIGN(v, yaml::as_u64(n.child("idle-timeout")));
    out.idle_timeout_s = static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 1u << 30));
  }
  if (!n.node["gpus"]) return {};
  Located gpus = n.child("gpus");
  if (auto r = yaml::require_map(gpus); !r) return r;
  for (const auto& kv : gpus.node) {
    const std::string key = kv.first.Scalar();
    Located value{kv.second, gpus.file, gpus.key + "." + key};
    bool is_index = !key.empty() && key.size() < 4 && key.find_first_not_of("0123456789") == std::string::npos;
    if (!is_index && !key.starts_with("GPU-"))
      return value.fail("GPU key must be an index (\"0\") or a GPU UUID (GPU-...)");
    GPUFRAC_TRY_ASSIGN(out.gpus[key], mig_mode_value(value));
  }
  return {};
}

Result<> parse_log(const Located& n, LogConfig& out) {
  if (auto r = yaml::check_keys(n, {"target", "file", "level"}); !r) return r;
  if (n.node["target"]) {
    auto t = yaml::as_choice(n.child("target"), {"file", "journal", "stderr"});
    if (!t) return std::unexpected(t.error());
    out.target = *t == "journal" ? LogTarget::journal : *t == "stderr" ? LogTarget::stderr_ : LogTarget::file;
  }
  if (n.node["file"]) GPUFRAC_TRY_ASSIGN(out.file, path_value(n.child("file")));
  if (n.node["level"])
    GPUFRAC_TRY_ASSIGN(out.level, yaml::as_choice(n.child("level"), {"debug", "info", "warn", "error"}));
  return {};
}

// burst: {reclaim: kill|refuse|swap, context-allowance: AMOUNT, cuda-library: PATH}.
// swap: {host-memory: AMOUNT} (0: no node-wide budget).
Result<> parse_swap(const Located& swap, SwapConfig& out) {
  if (auto r = yaml::check_keys(swap, {"host-memory"}); !r) return r;
  if (!swap.node["host-memory"]) return {};
  auto text = yaml::as_string(swap.child("host-memory"));
  if (!text) return std::unexpected(text.error());
  if (*text == "0") {
    out.host_memory = 0;
    return {};
  }
  auto v = parse_memory(*text);
  if (!v) return swap.child("host-memory").fail(v.error().message);
  out.host_memory = *v;
  return {};
}

Result<> parse_burst(const Located& burst, BurstConfig& out) {
  if (auto r = yaml::check_keys(burst, {"reclaim", "context-allowance", "cuda-library"}); !r) return r;
  if (burst.node["reclaim"]) {
    auto v = yaml::as_choice(burst.child("reclaim"), {"kill", "refuse", "swap"});
    if (!v) return std::unexpected(v.error());
    out.reclaim = *v == "refuse" ? BurstReclaim::refuse : *v == "swap" ? BurstReclaim::swap : BurstReclaim::kill;
  }
  if (burst.node["cuda-library"]) GPUFRAC_TRY_ASSIGN(out.cuda_library, yaml::as_string(burst.child("cuda-library")));
  if (!burst.node["context-allowance"]) return {};
  auto text = yaml::as_string(burst.child("context-allowance"));
  if (!text) return std::unexpected(text.error());
  if (*text == "0") {
    out.context_allowance = 0;
    return {};
  }
  auto v = parse_memory(*text);
  if (!v) return burst.child("context-allowance").fail(v.error().message);
  out.context_allowance = *v;
  return {};
}

Result<> parse_requests(const Located& n, RequestsConfig& out) {
  if (auto r = yaml::check_keys(n, {"unknown"}); !r) return r;
  if (!n.node["unknown"]) return {};
  auto v = yaml::as_choice(n.child("unknown"), {"refuse", "warn"});
  if (!v) return std::unexpected(v.error());
  out.unknown = *v == "warn" ? UnknownNames::warn : UnknownNames::refuse;
  return {};
}

}  // namespace

// Declared here, defined in config_sections.cpp (CDI, shim, hook and runtime sections).
Result<> parse_cdi_section(const Located& n, CdiConfig& out);
Result<> parse_paths_section(const Located& root, Config& out);
Result<> parse_compute_section(const Located& n, SmSharingConfig& out);  // config_compute.cpp

namespace {

Result<> parse_sections(const Located& root, Config& c) {
  if (root.node["nvml"])
    if (auto r = parse_nvml(root.child("nvml"), c.nvml); !r) return r;
  if (root.node["allocation"])
    if (auto r = parse_allocation(root.child("allocation"), c.allocation); !r) return r;
  if (root.node["mig"])
    if (auto r = parse_mig(root.child("mig"), c.mig); !r) return r;
  if (root.node["compute"])
    if (auto r = parse_compute_section(root.child("compute"), c.allocation.sm_sharing); !r) return r;
  if (root.node["log"])
    if (auto r = parse_log(root.child("log"), c.log); !r) return r;
  if (root.node["driver"])
    if (auto r = parse_driver(root.child("driver"), c.driver); !r) return r;
  if (root.node["cdi"])
    if (auto r = parse_cdi_section(root.child("cdi"), c.cdi); !r) return r;
  if (root.node["burst"])
    if (auto r = parse_burst(root.child("burst"), c.burst); !r) return r;
  if (root.node["swap"])
    if (auto r = parse_swap(root.child("swap"), c.swap); !r) return r;
  if (root.node["enforcement"]) {
    auto v = yaml::as_choice(root.child("enforcement"), {"auto", "driver", "shim"});
    if (!v) return std::unexpected(v.error());
    c.enforcement = *v == "driver" ? Enforcement::driver : *v == "shim" ? Enforcement::shim : Enforcement::auto_detect;
  }
  if (root.node["aliases"]) GPUFRAC_TRY_ASSIGN(c.aliases, yaml::as_bool(root.child("aliases")));
  if (root.node["requests"])
    if (auto r = parse_requests(root.child("requests"), c.requests); !r) return r;
  if (root.node["require-host-pid"])
    GPUFRAC_TRY_ASSIGN(c.require_host_pid, yaml::as_bool(root.child("require-host-pid")));
  if (root.node["lock-timeout"]) {
    GPUFRAC_TRY_ASSIGN(c.lock_timeout_s, yaml::as_u64(root.child("lock-timeout")));
    if (c.lock_timeout_s < 1 || c.lock_timeout_s > 25)
      return root.child("lock-timeout").fail("must be 1 to 25 seconds (below the hooks' 30 s timeout), e.g. 10");
  }
  if (root.node["runtimes"]) {
    GPUFRAC_TRY_ASSIGN(c.runtimes, yaml::as_string_list(root.child("runtimes")));
    if (c.runtimes.empty()) return root.child("runtimes").fail("must name at least one runtime, e.g. [runc, crun]");
  }
  return parse_paths_section(root, c);
}

}  // namespace

Result<Config> load_config_string(const std::string& content, const std::string& name) {
  auto root = yaml::load_string(content, name);
  if (!root) return std::unexpected(root.error());
  if (auto r = yaml::check_keys(
          *root, {"state-dir", "host-root",        "proc-root",    "cgroup-root", "nvml",   "allocation",
                  "aliases",   "require-host-pid", "lock-timeout", "mig",         "shim",   "hook",
                  "cli",       "runtimes",         "log",          "cdi",         "driver", "enforcement",
                  "burst",     "requests",         "compute",      "swap"});
      !r)
    return std::unexpected(r.error());
  Config c = default_config();
  c.source = name;
  if (auto r = parse_sections(*root, c); !r) return std::unexpected(r.error());
  return c;
}

Result<Config> load_config_file(const std::string& path) {
  auto content = fs::read_file(path, 1u << 20);
  if (!content) {
    Error e = content.error();
    e.kind = ErrorKind::user;
    return std::unexpected(std::move(e.wrap("config")));
  }
  // Once it is known to exist (a missing file is the "cannot open" above). A user who could swap the
  // file between the read and this check could change a directory on its path: refused here.
  if (auto r = check_config_trust(path); !r) return std::unexpected(r.error());
  return load_config_string(*content, path);
}

Result<Config> select_config(const std::string& flag_path) {
  if (!flag_path.empty()) return load_config_file(flag_path);
  if (const char* env = std::getenv(kConfigEnv); env && *env) return load_config_file(env);
  if (fs::exists(kDefaultConfigPath)) return load_config_file(kDefaultConfigPath);
  return default_config();
}

}  // namespace gpufrac
