#include "core/process.hpp"

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac {

Result<ProcStat> parse_proc_stat(std::string_view content) {
  auto bad = [&](std::string_view why) { return internal_error(text::cat("process stat: ", why)); };
  auto close = content.rfind(')');
  if (content.find('(') == std::string_view::npos || close == std::string_view::npos) return bad("no (comm)");
  std::string_view rest = content.substr(close + 1);
  if (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  if (!rest.starts_with(' ')) return bad("no fields after comm");
  // Fields 3 (state) to 22 (starttime), space-separated after comm; walked without allocating.
  std::string_view fields[20];
  std::size_t count = 0;
  rest.remove_prefix(1);
  while (count < 20) {
    auto space = rest.find(' ');
    fields[count++] = rest.substr(0, space);
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  if (count < 20) return bad(text::cat("only ", count + 2, " fields"));
  if (fields[0].size() != 1) return bad("bad state field");
  auto start = text::parse_u64(fields[19]);
  if (!start) return bad("bad start time field");
  return ProcStat{fields[0][0], *start};
}

Result<ProcStat> read_proc_stat(const std::string& proc_root, std::int64_t pid) {
  const std::string path = text::cat(proc_root, "/", pid, "/stat");
  auto content = fs::read_file(path, 4096);
  if (!content) return std::unexpected(content.error());
  auto stat = parse_proc_stat(*content);
  if (!stat) return std::unexpected(stat.error().wrap(path));
  return stat;
}

const char* to_string(Liveness l) {
  switch (l) {
    case Liveness::alive:
      return "alive";
    case Liveness::exited:
      return "exited";
    case Liveness::reused:
      return "pid reused";
    case Liveness::unknown:
      break;
  }
  return "unknown";
}

Liveness process_liveness(const std::string& proc_root, std::int64_t pid, std::uint64_t start_time) {
  if (pid <= 0) return Liveness::unknown;
  auto stat = read_proc_stat(proc_root, pid);
  if (!stat) return stat.error().err == ENOENT || stat.error().err == ESRCH ? Liveness::exited : Liveness::unknown;
  if (stat->start_time != start_time) return Liveness::reused;
  if (stat->state == 'Z' || stat->state == 'X' || stat->state == 'x') return Liveness::exited;
  return Liveness::alive;
}

}  // namespace gpufrac
