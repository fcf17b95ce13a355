#include "core/config/config_trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "core/fs.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

Result<> check_one(const std::string& path, const std::string& config, bool is_file) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return sys_error("cannot stat " + path);
  const bool sticky_dir = !is_file && (st.st_mode & S_ISVTX) && st.st_uid == 0;
  const bool writable = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (st.st_uid == 0 && (!writable || sticky_dir)) return {};
  return user_error(text::cat("config ", config, ": ", is_file ? "the file" : "the directory ", is_file ? "" : path,
                              " may be changed by a user other than root (owner ", st.st_uid, ", mode ",
                              text::format_mode(st.st_mode & 07777),
                              "); running as root, gpufrac reads only a config that root alone can change: "
                              "chown root and chmod go-w"));
}

}  // namespace

Result<> check_config_trust(const std::string& path) {
  if (::geteuid() != 0) return {};
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) return sys_error("cannot resolve config path " + path);
  std::string p = resolved;
  if (auto r = check_one(p, path, true); !r) return r;
  while (p != "/") {
    p = fs::dirname(p);
    if (auto r = check_one(p, path, false); !r) return r;
  }
  return {};
}

}  // namespace gpufrac
