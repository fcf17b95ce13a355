#include "runtime-wrapper/argv.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace gpufrac::wrapper {

namespace {

constexpr std::array<std::string_view, 7> kGlobalValued = {"log",  "log-format", "log-level",     "root",
                                                           "criu", "rootless",   "cgroup-manager"};
constexpr std::array<std::string_view, 7> kCreateValued = {"bundle", "b", "console-socket", "pid-file", "preserve-fds",
                                                           "config", "f"};

struct Flag {
  std::string_view name;
  std::optional<std::string_view> inline_value;  // --name=value
};

// "-x", "--name", "--name=value" -> the flag; "" , "-", "--" and positionals -> nullopt.
std::optional<Flag> as_flag(std::string_view arg) {
  if (arg.size() < 2 || arg.front() != '-' || arg == "--") return std::nullopt;
  arg.remove_prefix(arg[1] == '-' ? 2 : 1);
  if (arg.empty()) return std::nullopt;
  auto eq = arg.find('=');
  if (eq == std::string_view::npos) return Flag{arg, std::nullopt};
  return Flag{arg.substr(0, eq), arg.substr(eq + 1)};
}

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& set, std::string_view name) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

// The value of a valued flag: inline, or the next argument (consumed). nullopt at the end of argv.
std::optional<std::string_view> take_value(const Flag& f, const std::vector<std::string_view>& args, std::size_t& i) {
  if (f.inline_value) return f.inline_value;
  if (i + 1 >= args.size()) return std::nullopt;
  return args[++i];
}

void set_global(RuntimeArgs& out, std::string_view name, std::string_view value) {
  if (name == "log") out.log_path = value;
  if (name == "log-format") out.log_format = value;
}

void set_create(RuntimeArgs& out, std::string_view name, std::string_view value) {
  if (name == "bundle" || name == "b") out.bundle = value;
  if (name == "config" || name == "f") out.config_file = value;
}

void parse_command_args(const std::vector<std::string_view>& args, std::size_t i, RuntimeArgs& out) {
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      if (i + 1 < args.size() && out.container_id.empty()) out.container_id = args[i + 1];
      return;
    }
    auto f = as_flag(args[i]);
    if (!f) {
      if (out.container_id.empty()) out.container_id = args[i];
      continue;
    }
    if (!contains(kCreateValued, f->name)) continue;
    if (auto v = take_value(*f, args, i)) set_create(out, f->name, *v);
  }
}

}  // namespace

RuntimeArgs parse_runtime_args(const std::vector<std::string_view>& args) {
  RuntimeArgs out;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    auto f = as_flag(args[i]);
    if (!f) break;
    if (!contains(kGlobalValued, f->name)) continue;
    if (auto v = take_value(*f, args, i)) set_global(out, f->name, *v);
  }
  if (i >= args.size()) return out;
  out.command = args[i];
  out.creates = out.command == "create" || out.command == "run";
  if (out.creates) parse_command_args(args, i + 1, out);
  return out;
}

Result<std::string> take_config_flag(int& argc, char** argv) {
  if (argc < 2) return std::string();
  const std::string_view first = argv[1];
  if (!first.starts_with(kConfigFlag)) return std::string();
  std::string path;
  int taken = 1;
  if (first.size() > kConfigFlag.size() && first[kConfigFlag.size()] == '=') {
    path = std::string(first.substr(kConfigFlag.size() + 1));
  } else if (first.size() == kConfigFlag.size() && argc > 2) {
    path = argv[2];
    taken = 2;
  } else if (first.size() != kConfigFlag.size()) {
    return std::string();  // another flag that merely starts the same: the runtime's to judge
  }
  if (path.empty() || path.front() != '/')
    return user_error(std::string(kConfigFlag) + ": needs the absolute path of gpufrac's config, e.g. " +
                      std::string(kConfigFlag) + " /etc/gpufrac/config.yaml");
  for (int i = 1; i + taken <= argc; ++i) argv[i] = argv[i + taken];  // moves the NULL too
  argc -= taken;
  return path;
}

}  // namespace gpufrac::wrapper
