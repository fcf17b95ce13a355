#include "core/ledger_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <memory>

#include "core/fault.hpp"
#include "core/ledger_json.hpp"
#include "core/text.hpp"

namespace gpufrac {

Result<LedgerLock> LedgerLock::acquire(const std::string& lock_path) {
  if (auto r = fs::make_dirs(fs::dirname(lock_path), 0755); !r) return std::unexpected(r.error());
  fs::UniqueFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return sys_error("cannot open ledger lock " + lock_path);
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sys_error("cannot lock " + lock_path);
  return LedgerLock(std::move(fd));
}

Result<LedgerState> load_ledger_file(const std::string& path) {
  auto text = fs::read_file(path, 64u << 20);
  if (!text) {
    if (text.error().err == ENOENT) return LedgerState{};
    return std::unexpected(text.error());
  }
  return parse_ledger(*text, path);
}

namespace {

void crash_probe(fs::AtomicWriteStage stage) {
  fault::point(stage == fs::AtomicWriteStage::temp_written ? "ledger-after-temp-write" : "ledger-before-rename");
}

}  // namespace

Result<> save_ledger_file(const std::string& path, const LedgerState& state) {
  return fs::write_file_atomic(path, ledger_to_json(state), 0644, crash_probe);
}

Result<std::vector<std::string>> remove_stale_temp_files(const std::string& path) {
  const std::string dir = fs::dirname(path);
  const std::string prefix = "." + fs::basename(path) + ".tmp.";
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return sys_error("cannot list " + dir);
  std::vector<std::string> removed;
  while (const dirent* ent = ::readdir(d.get())) {
    std::string name = ent->d_name;
    if (!name.starts_with(prefix)) continue;
    if (::unlinkat(::dirfd(d.get()), name.c_str(), 0) != 0 && errno != ENOENT)
      return sys_error("cannot remove " + dir + "/" + name);
    removed.push_back(dir + "/" + name);
  }
  return removed;
}

}  // namespace gpufrac
