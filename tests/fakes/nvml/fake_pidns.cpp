#include "fake_pidns.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac::fake_nvml {

namespace {

std::uint64_t pidns_of(const std::string& pid) {
  struct stat st {};
  return ::stat(("/proc/" + pid + "/ns/pid").c_str(), &st) == 0 ? st.st_ino : 0;
}

bool digits(const std::string& s) {
  return !s.empty() && s.size() <= 12 && s.find_first_not_of("0123456789") == std::string::npos;
}

// The last NSpid field of /proc/<pid>/status: the pid in the process's own namespace.
std::string own_ns_pid(const std::string& pid) {
  auto text = fs::read_file("/proc/" + pid + "/status", 64u << 10);
  if (!text) return "";
  for (const auto& line : text::split(*text, '\n')) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream in(line.substr(6));
    std::string last;
    for (std::string f; in >> f;) last = f;
    return last;
  }
  return "";
}

}  // namespace

void record_host_pidns(const std::string& state_file) {
  const std::string path = state_file + ".pidns", tmp = text::cat(path, ".", ::getpid());
  if (fs::exists(path)) return;
  if (!fs::write_file_atomic(tmp, text::cat(pidns_of("self"), "\n"), 0644)) return;
  if (::link(tmp.c_str(), path.c_str()) != 0) {
    // EEXIST: another process recorded it first, and the first one stays
  }
  ::unlink(tmp.c_str());
}

std::optional<std::string> host_pid_of(const std::string& entry) {
  const auto at = entry.find('@');
  if (at == std::string::npos) return digits(entry) ? std::optional(entry) : std::nullopt;
  const std::string pid = entry.substr(0, at), ino = entry.substr(at + 1);
  if (!digits(pid) || !digits(ino)) return std::nullopt;
  if (text::cat(pidns_of("self")) == ino) return pid;
  DIR* d = ::opendir("/proc");
  if (!d) return std::nullopt;
  std::optional<std::string> found;
  while (const dirent* e = ::readdir(d)) {
    const std::string p = e->d_name;
    if (digits(p) && text::cat(pidns_of(p)) == ino && own_ns_pid(p) == pid) {
      found = p;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace gpufrac::fake_nvml
