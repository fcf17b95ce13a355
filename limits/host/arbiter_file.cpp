#include "limits/host/arbiter_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "gf_arbiter.h"

namespace gpufrac::limits {

namespace {

constexpr std::size_t kSize = sizeof(gpufrac_arbiter);

class Mapping {
 public:
  explicit Mapping(void* p) : p_(p) {}
  Mapping(Mapping&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Mapping(const Mapping&) = delete;
  ~Mapping() {
    if (p_ != nullptr) ::munmap(p_, kSize);
  }
  gpufrac_arbiter* get() const { return static_cast<gpufrac_arbiter*>(p_); }

 private:
  void* p_;
};

Result<Mapping> map_fd(int fd, const std::string& path, bool writable) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat compute arbiter " + path);
  if (!S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != kSize)
    return internal_error(text::cat("compute arbiter ", path, ": ", st.st_size, " bytes; accepted: a regular file of ",
                                    kSize, " bytes (arbiter version ", GPUFRAC_ARBITER_VERSION, ")"));
  void* p = ::mmap(nullptr, kSize, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return sys_error("cannot map compute arbiter " + path);
  return Mapping(p);
}

Result<Mapping> map_checked(const std::string& path, bool writable) {
  fs::UniqueFd fd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return sys_error("cannot open compute arbiter " + path);
  auto m = map_fd(fd.get(), path, writable);
  if (!m) return m;
  char err[256];
  if (gf_arbiter_check(m->get(), err, sizeof err) != 0) return internal_error("compute arbiter " + path + ": " + err);
  return m;
}

// The new arbiter in a temporary file beside path: allocated in full, then formatted.
Result<std::string> make_temp(const std::string& path, const std::string& gpu_uuid) {
  const std::string tmp = text::cat(fs::dirname(path), "/.", fs::basename(path), ".tmp.", ::getpid());
  ::unlink(tmp.c_str());
  fs::UniqueFd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (!fd) return sys_error("cannot create " + tmp);
  auto fail = [&](std::unexpected<Error> e) {
    ::unlink(tmp.c_str());
    return e;
  };
  if (int e = ::posix_fallocate(fd.get(), 0, kSize); e != 0)
    return fail(sys_error(text::cat("compute arbiter ", path, ": cannot allocate ", kSize, " bytes"), e));
  if (::fchmod(fd.get(), 0666) != 0) return fail(sys_error("cannot chmod " + tmp));
  auto m = map_fd(fd.get(), tmp, true);
  if (!m) return fail(std::unexpected(m.error()));
  gpufrac_arbiter_params params;
  gf_arbiter_default_params(&params);
  gf_arbiter_format(m->get(), gpu_uuid.c_str(), &params);
  return tmp;
}

std::uint64_t random_token() {
  std::uint64_t t = 0;
  while (t == 0)
    if (::getrandom(&t, sizeof t, 0) != static_cast<ssize_t>(sizeof t))
      t = (static_cast<std::uint64_t>(std::time(nullptr)) << 20) ^ static_cast<std::uint64_t>(::getpid());
  return t;
}

std::uint32_t flags_of(ComputeMode mode, ComputePriority priority) {
  return (mode == ComputeMode::strict ? GPUFRAC_ARBITER_STRICT : 0u) |
         (priority == ComputePriority::high ? GPUFRAC_ARBITER_HIGH : 0u);
}

std::uint64_t monotonic_ns() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

ArbiterSlotView slot_view(const gpufrac_arbiter* a, unsigned i, std::uint64_t now_ns) {
  const gpufrac_arbiter_slot& s = a->slots[i];
  ArbiterSlotView v;
  v.index = i;
  v.key.assign(s.key, strnlen(s.key, GPUFRAC_ARBITER_KEY));
  v.weight_ppm = gf_arbiter_weight(&s);
  const std::uint32_t flags = __atomic_load_n(&s.flags, __ATOMIC_RELAXED);
  v.mode = flags & GPUFRAC_ARBITER_STRICT ? ComputeMode::strict : ComputeMode::fair;
  v.priority = flags & GPUFRAC_ARBITER_HIGH ? ComputePriority::high : ComputePriority::normal;
  v.active = __atomic_load_n(&s.state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_ACTIVE;
  v.created_s = s.created_s;
  v.window_ns = gf_arbiter_window_ns(a, i, now_ns);
  v.charged_ns = __atomic_load_n(&s.charged_ns, __ATOMIC_RELAXED);
  v.leases = __atomic_load_n(&s.leases, __ATOMIC_RELAXED);
  return v;
}

}  // namespace

std::uint32_t ArbiterSlotView::achieved_ppm() const {
  const std::uint64_t window = GPUFRAC_ARBITER_WINDOW_S * 1000000000ull;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(window_ns, window) / (window / 1000000));
}

Result<> ensure_arbiter(const std::string& path, const std::string& gpu_uuid) {
  if (fs::exists(path) && map_checked(path, false)) return {};
  if (auto d = fs::make_dirs(fs::dirname(path), 0755); !d) return d;
  auto tmp = make_temp(path, gpu_uuid);
  if (!tmp) return std::unexpected(tmp.error());
  // link() keeps an arbiter another booking created meanwhile; a file that is not one is replaced.
  int rc = ::link(tmp->c_str(), path.c_str());
  if (rc != 0 && errno == EEXIST && !map_checked(path, false)) rc = ::rename(tmp->c_str(), path.c_str());
  const int err = errno;
  ::unlink(tmp->c_str());
  if (rc != 0 && err != EEXIST) return sys_error("cannot create compute arbiter " + path, err);
  return {};
}

Result<std::uint64_t> attach_arbiter_slot(const std::string& path, const std::string& key, std::uint32_t weight_ppm,
                                          ComputeMode mode, ComputePriority priority) {
  if (key.empty() || key.size() >= GPUFRAC_ARBITER_KEY)
    return internal_error(text::cat("compute arbiter ", path, ": container key of ", key.size(),
                                    " characters; accepted: 1 to ", GPUFRAC_ARBITER_KEY - 1));
  auto m = map_checked(path, true);
  if (!m) return std::unexpected(m.error());
  const int i = gf_arbiter_setup(m->get(), key.c_str(), random_token(), weight_ppm, flags_of(mode, priority),
                                 static_cast<std::uint64_t>(std::time(nullptr)));
  if (i < 0)
    return user_error(text::cat("compute arbiter ", path, ": all ", GPUFRAC_ARBITER_SLOTS,
                                " container slots of this GPU are taken; accepted: at most ", GPUFRAC_ARBITER_SLOTS,
                                " containers with a compute share per GPU"));
  return __atomic_load_n(&m->get()->slots[i].token, __ATOMIC_SEQ_CST);
}

Result<unsigned> release_arbiter_slots(const std::string& path, const std::string& key) {
  if (!fs::exists(path)) return 0u;
  auto m = map_checked(path, true);
  if (!m) return std::unexpected(m.error());
  return gf_arbiter_release_key(m->get(), key.c_str());
}

Result<ArbiterView> read_arbiter(const std::string& path, std::uint64_t now_ns) {
  auto m = map_checked(path, false);
  if (!m) return std::unexpected(m.error());
  const gpufrac_arbiter* a = m->get();
  if (now_ns == 0) now_ns = monotonic_ns();
  ArbiterView v;
  v.gpu_uuid.assign(a->uuid, strnlen(a->uuid, sizeof a->uuid));
  const std::uint64_t w = __atomic_load_n(&a->lease, __ATOMIC_SEQ_CST);
  v.holder = gpufrac_lease_holder(w);
  v.claimed = gpufrac_lease_claimed(w) != 0;
  v.holder_pid = __atomic_load_n(&a->holder_pid, __ATOMIC_RELAXED);
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(a); i < n; i++) {
    if (__atomic_load_n(&a->slots[i].state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_FREE)
      v.slots.push_back(slot_view(a, i, now_ns));
  }
  return v;
}

Result<std::vector<std::string>> sweep_arbiter(const std::string& path, const std::vector<std::string>& keep,
                                               std::uint64_t min_age_s) {
  auto m = map_checked(path, true);
  if (!m) return std::unexpected(m.error());
  gpufrac_arbiter* a = m->get();
  const auto now = static_cast<std::uint64_t>(std::time(nullptr));
  std::vector<std::string> freed;
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(a); i < n; i++) {
    ArbiterSlotView s = slot_view(a, i, 0);
    if (__atomic_load_n(&a->slots[i].state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_FREE) continue;
    if (std::find(keep.begin(), keep.end(), s.key) != keep.end() || now < s.created_s + min_age_s) continue;
    if (gf_arbiter_release(a, i)) freed.push_back(s.key);
  }
  return freed;
}

}  // namespace gpufrac::limits
