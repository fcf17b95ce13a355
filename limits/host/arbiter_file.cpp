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
#include <optional>
#include <utility>

#include "core/fs.hpp"
#include "core/text.hpp"
#include "gf_arbiter.h"
#include "limits/host/arbiter_checks.hpp"

namespace gpufrac::limits {

namespace {

constexpr std::size_t kLeaseSize = sizeof(gpufrac_arbiter);
constexpr std::size_t kSlotsSize = sizeof(gpufrac_arbiter_slots);

class Mapping {
 public:
  Mapping(void* p, std::size_t size) : p_(p), size_(size) {}
  Mapping(Mapping&& o) noexcept : p_(std::exchange(o.p_, nullptr)), size_(o.size_) {}
  Mapping(const Mapping&) = delete;
  ~Mapping() {
    if (p_ != nullptr) ::munmap(p_, size_);
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_;
  std::size_t size_;
};

// grown: a lease file may be larger than its size (a tenant wrote past its end); its first size bytes
// are the arbiter.
Result<Mapping> map_fd(int fd, const std::string& path, std::size_t size, bool writable, bool grown = false) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat compute arbiter " + path);
  const auto at = static_cast<std::size_t>(st.st_size);
  if (!S_ISREG(st.st_mode) || at < size || (at != size && !grown))
    return internal_error(text::cat("compute arbiter ", path, ": ", st.st_size, " bytes; accepted: a regular file of ",
                                    size, " bytes (arbiter version ", GPUFRAC_ARBITER_VERSION, ")"));
  void* p = ::mmap(nullptr, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return sys_error("cannot map compute arbiter " + path);
  return Mapping(p, size);
}

Result<Mapping> map_file(const std::string& path, std::size_t size, bool writable, bool grown = false) {
  fs::UniqueFd fd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return sys_error("cannot open compute arbiter " + path);
  return map_fd(fd.get(), path, size, writable, grown);
}

Result<Mapping> map_slots(const std::string& path, bool writable) {
  auto m = map_file(arbiter_slots_path(path), kSlotsSize, writable);
  if (!m) return m;
  char err[256];
  if (gf_arbiter_slots_check(m->as<gpufrac_arbiter_slots>(), err, sizeof err) != 0)
    return internal_error("compute arbiter " + arbiter_slots_path(path) + ": " + err);
  return m;
}

Result<Mapping> map_lease(const std::string& path, bool writable) {
  auto m = map_file(path, kLeaseSize, writable, true);
  if (!m) return m;
  char err[256];
  if (gf_arbiter_check(m->as<gpufrac_arbiter>(), err, sizeof err) != 0)
    return internal_error("compute arbiter " + path + ": " + err);
  return m;
}

// Both files writable (the host's own view: it sets up and frees slots, resetting their lanes). The
// lease file is mapped whatever its header holds, and left out when it is not the right size: a slot
// is freed even where a tenant wrecked the lease file.
struct Both {
  Mapping slots;
  std::optional<Mapping> lease;
  gf_arb arb() const {
    return gf_arb{lease ? lease->as<gpufrac_arbiter>() : nullptr, slots.as<gpufrac_arbiter_slots>()};
  }
};

Result<Both> map_both(const std::string& path) {
  auto slots = map_slots(path, true);
  if (!slots) return std::unexpected(slots.error());
  auto lease = map_file(path, kLeaseSize, true, true);
  return Both{std::move(*slots), lease ? std::optional<Mapping>(std::move(*lease)) : std::nullopt};
}

// A new file in a temporary beside final, allocated in full and formatted by format; its path.
template <class Format>
Result<std::string> make_temp(const std::string& final, std::size_t size, mode_t mode, Format format) {
  const std::string tmp = text::cat(fs::dirname(final), "/.", fs::basename(final), ".tmp.", ::getpid());
  ::unlink(tmp.c_str());
  fs::UniqueFd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) return sys_error("cannot create " + tmp);
  auto fail = [&](std::unexpected<Error> e) {
    ::unlink(tmp.c_str());
    return e;
  };
  if (int e = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(size)); e != 0)
    return fail(sys_error(text::cat("compute arbiter ", final, ": cannot allocate ", size, " bytes"), e));
  if (::fchmod(fd.get(), mode) != 0) return fail(sys_error("cannot chmod " + tmp));
  auto m = map_fd(fd.get(), tmp, size, true);
  if (!m) return fail(std::unexpected(m.error()));
  format(*m);
  return tmp;
}

// Links tmp in place: an arbiter another booking linked meanwhile is kept, one that is not usable
// is replaced.
template <class Usable>
Result<> link_temp(const std::string& tmp, const std::string& final, Usable usable) {
  int rc = ::link(tmp.c_str(), final.c_str());
  if (rc != 0 && errno == EEXIST && !usable()) rc = ::rename(tmp.c_str(), final.c_str());
  const int err = errno;
  ::unlink(tmp.c_str());
  if (rc != 0 && err != EEXIST) return sys_error("cannot create compute arbiter " + final, err);
  return {};
}

void format_slots(const Mapping& m, const std::string& gpu_uuid) {
  gpufrac_arbiter_params params;
  gf_arbiter_default_params(&params);
  gf_arbiter_slots_format(m.as<gpufrac_arbiter_slots>(), gpu_uuid.c_str(), &params);
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

// Slot i as the slots file says; its charges from the lease file when that one is sane (lease).
ArbiterSlotView slot_view(const gpufrac_arbiter_slots* a, const gpufrac_arbiter* lease, unsigned i,
                          std::uint64_t now_ns) {
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
  if (lease == nullptr) return v;
  v.window_ns = gf_arbiter_window_ns(lease, i, now_ns);
  v.charged_ns = __atomic_load_n(&lease->lanes[i].charged_ns, __ATOMIC_RELAXED);
  v.leases = __atomic_load_n(&lease->lanes[i].leases, __ATOMIC_RELAXED);
  return v;
}

}  // namespace

std::string arbiter_slots_path(const std::string& path) {
  return path + GPUFRAC_ARBITER_SLOTS_SUFFIX;
}

std::uint32_t ArbiterSlotView::achieved_ppm() const {
  const std::uint64_t window = GPUFRAC_ARBITER_WINDOW_S * 1000000000ull;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(window_ns, window) / (window / 1000000));
}

Result<> ensure_arbiter(const std::string& path, const std::string& gpu_uuid) {
  const std::string slots = arbiter_slots_path(path);
  const bool slots_ok = fs::exists(slots) && map_slots(path, false);
  const bool lease_ok = fs::exists(path) && map_lease(path, false);
  if (slots_ok && lease_ok) return {};
  if (!lease_ok && slots_ok)
    if (auto m = map_file(path, kLeaseSize, true, true)) {
      gf_arbiter_format(m->as<gpufrac_arbiter>());  // its header overwritten: repaired in place
      return {};
    }
  if (auto d = fs::make_dirs(fs::dirname(path), 0755); !d) return d;
  // Both made before either is linked: a full directory refuses with nothing left behind.
  std::optional<std::string> slots_tmp, lease_tmp;
  if (!slots_ok) {
    auto t = make_temp(slots, kSlotsSize, 0644, [&](const Mapping& m) { format_slots(m, gpu_uuid); });
    if (!t) return std::unexpected(t.error());
    slots_tmp = *t;
  }
  if (!lease_ok) {
    auto t = make_temp(path, kLeaseSize, 0666, [](const Mapping& m) { gf_arbiter_format(m.as<gpufrac_arbiter>()); });
    if (!t) {
      if (slots_tmp) ::unlink(slots_tmp->c_str());
      return std::unexpected(t.error());
    }
    lease_tmp = *t;
  }
  if (slots_tmp)
    if (auto r = link_temp(*slots_tmp, slots, [&] { return map_slots(path, false).has_value(); }); !r) {
      if (lease_tmp) ::unlink(lease_tmp->c_str());
      return r;
    }
  if (lease_tmp) return link_temp(*lease_tmp, path, [&] { return map_lease(path, false).has_value(); });
  return {};
}

Result<std::uint64_t> attach_arbiter_slot(const std::string& path, const std::string& key, std::uint32_t weight_ppm,
                                          ComputeMode mode, ComputePriority priority) {
  if (key.empty() || key.size() >= GPUFRAC_ARBITER_KEY)
    return internal_error(text::cat("compute arbiter ", path, ": container key of ", key.size(),
                                    " characters; accepted: 1 to ", GPUFRAC_ARBITER_KEY - 1));
  auto m = map_both(path);
  if (!m) return std::unexpected(m.error());
  gf_arb arb = m->arb();
  const int i = gf_arbiter_setup(&arb, key.c_str(), random_token(), weight_ppm, flags_of(mode, priority),
                                 static_cast<std::uint64_t>(std::time(nullptr)));
  if (i < 0)
    return user_error(text::cat("compute arbiter ", path, ": all ", GPUFRAC_ARBITER_SLOTS,
                                " container slots of this GPU are taken; accepted: at most ", GPUFRAC_ARBITER_SLOTS,
                                " containers with a compute share per GPU"));
  return __atomic_load_n(&arb.slots->slots[i].token, __ATOMIC_SEQ_CST);
}

Result<unsigned> release_arbiter_slots(const std::string& path, const std::string& key) {
  if (!fs::exists(arbiter_slots_path(path))) return 0u;
  auto m = map_both(path);
  if (!m) return std::unexpected(m.error());
  gf_arb arb = m->arb();
  return gf_arbiter_release_key(&arb, key.c_str());
}

Result<ArbiterView> read_arbiter(const std::string& path, std::uint64_t now_ns) {
  auto slots = map_slots(path, false);
  if (!slots) return std::unexpected(slots.error());
  const gpufrac_arbiter_slots* a = slots->as<gpufrac_arbiter_slots>();
  if (now_ns == 0) now_ns = monotonic_ns();
  ArbiterView v;
  v.gpu_uuid.assign(a->uuid, strnlen(a->uuid, sizeof a->uuid));
  auto lease = map_file(path, kLeaseSize, false, true);
  const gpufrac_arbiter* l = lease ? lease->as<gpufrac_arbiter>() : nullptr;
  v.tampered = l != nullptr ? lease_file_problems(*a, *l, now_ns) : std::vector<std::string>{lease.error().message};
  struct stat st {};
  if (l != nullptr && ::stat(path.c_str(), &st) == 0 && static_cast<std::size_t>(st.st_size) != kLeaseSize)
    v.tampered.push_back(text::cat("its lease file grew to ", st.st_size, " bytes (the host made ", kLeaseSize, ")"));
  if (!v.tampered.empty()) l = nullptr;
  if (l != nullptr) {
    const std::uint64_t w = __atomic_load_n(&l->lease, __ATOMIC_SEQ_CST);
    v.holder = gpufrac_lease_holder(w);
    v.claimed = gpufrac_lease_claimed(w) != 0;
    v.holder_pid = __atomic_load_n(&l->holder_pid, __ATOMIC_RELAXED);
  }
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(a); i < n; i++) {
    if (__atomic_load_n(&a->slots[i].state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_FREE)
      v.slots.push_back(slot_view(a, l, i, now_ns));
  }
  return v;
}

Result<std::vector<std::string>> sweep_arbiter(const std::string& path, const std::vector<std::string>& keep,
                                               std::uint64_t min_age_s) {
  auto m = map_both(path);
  if (!m) return std::unexpected(m.error());
  gf_arb arb = m->arb();
  const auto now = static_cast<std::uint64_t>(std::time(nullptr));
  std::vector<std::string> freed;
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(arb.slots); i < n; i++) {
    if (__atomic_load_n(&arb.slots->slots[i].state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_FREE) continue;
    ArbiterSlotView s = slot_view(arb.slots, nullptr, i, 0);
    if (std::find(keep.begin(), keep.end(), s.key) != keep.end() || now < s.created_s + min_age_s) continue;
    if (gf_arbiter_release(&arb, i)) freed.push_back(s.key);
  }
  return freed;
}

}  // namespace gpufrac::limits
