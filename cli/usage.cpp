#include "cli/usage.hpp"

#include <algorithm>
#include <cstdio>

#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

std::vector<std::string> visible_subcommands(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* s : app->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
    out.push_back(s->get_name());
  return out;
}

// The long options of the command and of its parents (they fall through to them).
std::vector<std::string> long_options(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      for (const auto& name : o->get_lnames()) out.push_back("--" + name);
  return out;
}

std::string suggestion(const std::optional<std::string>& s) {
  return s ? "; did you mean " + text::quote(*s) + "?" : "";
}

std::string message_for(CLI::App& app, const CLI::ParseError& e) {
  CLI::App* cmd = innermost(app);
  const std::string where = command_path(cmd);
  const auto extras = app.remaining();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr || extras.empty())
    return std::string(e.what()) + " (see " + where + " --help)";
  const std::string& bad = extras.front();
  const std::string in = cmd == &app ? "" : " for " + text::quote(where);
  const auto options = long_options(cmd);
  const std::string name = bad.substr(0, bad.find('='));
  // Known to the command, so it came before the command's name: CLI11 reads an option only after
  // the command it belongs to (--config, the program's own, goes anywhere).
  if (cmd != &app && std::find(options.begin(), options.end(), name) != options.end())
    return text::quote(name) + " is an option of " + text::quote(where) + " and goes after it: " + where + " " + name +
           " ... (see " + where + " --help)";
  if (bad.starts_with("-"))
    return "unknown option " + text::quote(bad) + in + suggestion(closest(bad, options)) + " (see " + where +
           " --help)";
  const auto subcommands = visible_subcommands(cmd);
  if (!subcommands.empty())
    return "unknown command " + text::quote(bad) + in + suggestion(closest(bad, subcommands)) + " (see " + where +
           " --help)";
  return "unexpected argument " + text::quote(bad) + in + " (see " + where + " --help)";
}

}  // namespace

CLI::App* innermost(CLI::App& app) {
  CLI::App* a = &app;
  while (!a->get_subcommands().empty()) a = a->get_subcommands().front();
  return a;
}

std::string command_path(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent()) path = p->get_name() + " " + path;
  return path;
}

int report_usage_error(CLI::App& app, const CLI::ParseError& e) {
  std::fprintf(stderr, "gpufrac: %s\n", message_for(app, e).c_str());
  return kUsageExit;
}

bool print_group_help(CLI::App& app) {
  CLI::App* cmd = innermost(app);
  if (cmd->get_subcommands([](const CLI::App*) { return true; }).empty()) return false;
  std::printf("%s", cmd->help(cmd->get_parent() ? command_path(cmd->get_parent()) : "").c_str());
  return true;
}

}  // namespace gpufrac::cli
