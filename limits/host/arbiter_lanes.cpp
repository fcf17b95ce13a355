#include "limits/host/arbiter_lanes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "gf_arbiter.h"

namespace gpufrac::limits {

namespace {

constexpr std::size_t kLaneSize = sizeof(gpufrac_arbiter_lane);

std::string octal(unsigned mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", mode & 07777u);
  return b;
}

std::vector<std::string> differences(const struct stat& st, const std::string& key, uid_t uid, gid_t gid) {
  std::vector<std::string> out;
  const std::string name = text::cat("the lane file of ", text::quote(key, GPUFRAC_ARBITER_KEY));
  if (!S_ISREG(st.st_mode)) return {name + " is not a regular file"};
  if (static_cast<std::uint64_t>(st.st_size) != kLaneSize)
    out.push_back(text::cat(name, " is ", st.st_size, " bytes (the host made ", kLaneSize, ")"));
  if ((st.st_mode & 07777) != kLaneFileMode)
    out.push_back(text::cat(name, "'s mode is ", octal(st.st_mode), " (the host made ", octal(kLaneFileMode), ")"));
  if (st.st_uid != uid || st.st_gid != gid)
    out.push_back(text::cat(name, "'s owner is ", st.st_uid, ":", st.st_gid, " (the host made ", uid, ":", gid, ")"));
  return out;
}

Result<> pwrite_all(int fd, const void* p, std::size_t n, const std::string& path) {
  const auto* b = static_cast<const char*>(p);
  off_t at = 0;
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, b, n, at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return sys_error("cannot write compute arbiter lane " + path);
    b += w, n -= static_cast<std::size_t>(w), at += w;
  }
  return {};
}

std::uint64_t read_vclock(const std::string& path) {
  fs::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  std::uint64_t vclock = 0;
  if (!fd || ::pread(fd.get(), &vclock, sizeof vclock, offsetof(gpufrac_arbiter, vclock)) != sizeof vclock) return 0;
  return vclock;
}

}  // namespace

std::string arbiter_lanes_dir(const std::string& path) {
  return path + GPUFRAC_ARBITER_LANES_SUFFIX;
}

std::string arbiter_lane_path(const std::string& path, const std::string& key) {
  return arbiter_lanes_dir(path) + "/" + key;
}

Result<> check_lane_key(const std::string& path, const std::string& key) {
  if (key.empty() || key.size() >= GPUFRAC_ARBITER_KEY || key.find('/') != std::string::npos || key == "." ||
      key == "..")
    return internal_error(text::cat("compute arbiter ", path, ": container key ", text::quote(key, 256),
                                    "; accepted: 1 to ", GPUFRAC_ARBITER_KEY - 1, " characters, no '/', not . or .."));
  return {};
}

Result<> write_new_lane(const std::string& path, const std::string& key) {
  if (auto k = check_lane_key(path, key); !k) return k;
  const std::string dir = arbiter_lanes_dir(path), final = arbiter_lane_path(path, key);
  if (auto d = fs::make_dirs(dir, 0755); !d) return std::unexpected(d.error());
  const std::string tmp = text::cat(dir, "/.", key, ".tmp.", ::getpid());
  ::unlink(tmp.c_str());
  fs::UniqueFd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kLaneFileMode));
  if (!fd) return sys_error("cannot create " + tmp);
  auto fail = [&](std::unexpected<Error> e) {
    ::unlink(tmp.c_str());
    return e;
  };
  if (int e = ::posix_fallocate(fd.get(), 0, kLaneSize); e != 0)
    return fail(sys_error(text::cat("compute arbiter lane ", final, ": cannot allocate ", kLaneSize, " bytes"), e));
  if (::fchmod(fd.get(), kLaneFileMode) != 0) return fail(sys_error("cannot chmod " + tmp));
  gpufrac_arbiter_lane lane{};
  lane.vtime = read_vclock(path);  // a new slot has no credit: it joins the others
  if (auto w = pwrite_all(fd.get(), &lane, sizeof lane, tmp); !w) return fail(std::unexpected(w.error()));
  if (::rename(tmp.c_str(), final.c_str()) != 0) return fail(sys_error("cannot rename " + tmp + " to " + final));
  return {};
}

Result<std::vector<std::string>> repair_lane(const std::string& path, const std::string& key) {
  if (auto k = check_lane_key(path, key); !k) return std::unexpected(k.error());
  const std::string file = arbiter_lane_path(path, key);
  fs::UniqueFd fd(::open(file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {  // gone or replaced: a fresh one
    if (auto w = write_new_lane(path, key); !w) return std::unexpected(w.error());
    return std::vector<std::string>{
        text::cat("the lane file of ", text::quote(key, GPUFRAC_ARBITER_KEY), " was missing or not a regular file")};
  }
  auto fixed = differences(st, key, ::geteuid(), ::getegid());
  if (static_cast<std::uint64_t>(st.st_size) != kLaneSize && ::ftruncate(fd.get(), kLaneSize) != 0)
    return sys_error("cannot set the size of compute arbiter lane " + file);
  if (int e = ::posix_fallocate(fd.get(), 0, kLaneSize); e != 0)
    return sys_error(text::cat("compute arbiter lane ", file, ": cannot allocate ", kLaneSize, " bytes"), e);
  if ((st.st_mode & 07777) != kLaneFileMode && ::fchmod(fd.get(), kLaneFileMode) != 0)
    return sys_error("cannot chmod compute arbiter lane " + file);
  if ((st.st_uid != ::geteuid() || st.st_gid != ::getegid()) && ::fchown(fd.get(), ::geteuid(), ::getegid()) != 0)
    return sys_error("cannot chown compute arbiter lane " + file);
  return fixed;
}

void remove_lane(const std::string& path, const std::string& key) {
  if (check_lane_key(path, key)) ::unlink(arbiter_lane_path(path, key).c_str());
}

void remove_lanes_except(const std::string& path, const std::vector<std::string>& keep) {
  const std::string dir = arbiter_lanes_dir(path);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename();
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) ::unlink(e.path().c_str());
  }
  if (keep.empty()) ::rmdir(dir.c_str());
}

LaneCopy read_lane_file(const std::string& path, const std::string& key, uid_t owner_uid, gid_t owner_gid) {
  LaneCopy c;
  if (!check_lane_key(path, key)) return c;
  const std::string file = arbiter_lane_path(path, key);
  fs::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    c.wrong.push_back(text::cat("the lane file of ", text::quote(key, GPUFRAC_ARBITER_KEY), " is missing"));
    return c;
  }
  c.wrong = differences(st, key, owner_uid, owner_gid);
  ssize_t got;
  do {
    got = ::pread(fd.get(), &c.lane, kLaneSize, 0);
  } while (got < 0 && errno == EINTR);
  c.readable = got == static_cast<ssize_t>(kLaneSize);
  if (!c.readable) std::memset(&c.lane, 0, kLaneSize);
  return c;
}

std::vector<gpufrac_arbiter_lane> read_slot_lanes(const std::string& path, const gpufrac_arbiter_slots& a,
                                                  uid_t owner_uid, gid_t owner_gid, std::vector<std::string>& wrong) {
  std::vector<gpufrac_arbiter_lane> lanes(GPUFRAC_ARBITER_SLOTS);
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(&a); i < n; i++) {
    if (__atomic_load_n(&a.slots[i].state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_ACTIVE) continue;
    const std::string key(a.slots[i].key, strnlen(a.slots[i].key, GPUFRAC_ARBITER_KEY));
    LaneCopy c = read_lane_file(path, key, owner_uid, owner_gid);
    lanes[i] = c.lane;
    for (auto& why : c.wrong) wrong.push_back(text::cat("slot ", i, ": ", why));
  }
  return lanes;
}

void repair_slot_lanes(const std::string& path, const gpufrac_arbiter_slots& a, std::vector<std::string>& repaired) {
  std::vector<std::string> keys;
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(&a); i < n; i++) {
    const std::uint32_t state = __atomic_load_n(&a.slots[i].state, __ATOMIC_SEQ_CST);
    if (state == GPUFRAC_ARBITER_FREE) continue;
    keys.emplace_back(a.slots[i].key, strnlen(a.slots[i].key, GPUFRAC_ARBITER_KEY));
    if (state != GPUFRAC_ARBITER_ACTIVE) continue;
    auto r = repair_lane(path, keys.back());
    if (!r) repaired.push_back(r.error().message);
    if (r) repaired.insert(repaired.end(), r->begin(), r->end());
  }
  remove_lanes_except(path, keys);
}

}  // namespace gpufrac::limits
