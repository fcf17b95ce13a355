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
  if (bad.starts_with("-"))
    return "unknown option " + text::quote(bad) + in + suggestion(closest(bad, long_options(cmd))) + " (see " + where +
           " --help)";
  const auto subcommands = visible_subcommands(cmd);
  if (!subcommands.empty())
    return "unknown command " + text::quote(bad) + in + suggestion(closest(bad, subcommands)) + " (see " + where +
           " --help)";
  return "unexpected argument " + text::quote(bad) + in + " (see " + where + " --help)";
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    const bool typo = d <= 2 && 2 * d < word.size();
    const bool prefix = word.size() >= 2 && std::string_view(c).starts_with(word);
    if ((typo || prefix) && (!best || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

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
