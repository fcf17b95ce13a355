#include "limits/host/arbiter_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
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
#include "limits/host/arbiter_lanes.hpp"
#include "limits/host/arbiter_lease.hpp"

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

Result<Mapping> map_fd(int fd, const std::string& path, std::size_t size, bool writable) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat compute arbiter " + path);
  if (!S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != size)
    return internal_error(text::cat("compute arbiter ", path, ": ", st.st_size, " bytes; accepted: a regular file of ",
                                    size, " bytes (arbiter version ", GPUFRAC_ARBITER_VERSION, ")"));
  void* p = ::mmap(nullptr, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return sys_error("cannot map compute arbiter " + path);
  return Mapping(p, size);
}

// The slots file, open (the host's changes to it are serialised by flock on it) and mapped. Only the
// host writes or resizes it: it is bound read-only into containers (EROFS to every write, truncate,
// chmod). The lease file is never mapped here (limits/host/arbiter_lease.hpp).
struct SlotsFile {
  fs::UniqueFd fd;
  Mapping map;
  gpufrac_arbiter_slots* get() const { return map.as<gpufrac_arbiter_slots>(); }
  // The host's view for slot setup and release: lane files are made and removed by path instead.
  gf_arb arb() const {
    gf_arb a{};
    a.slots = get();
    return a;
  }
};

Result<SlotsFile> open_slots(const std::string& path, bool writable) {
  const std::string sp = arbiter_slots_path(path);
  fs::UniqueFd fd(::open(sp.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return sys_error("cannot open compute arbiter " + sp);
  auto m = map_fd(fd.get(), sp, kSlotsSize, writable);
  if (!m) return std::unexpected(m.error());
  char err[256];
  if (gf_arbiter_slots_check(m->as<gpufrac_arbiter_slots>(), err, sizeof err) != 0)
    return internal_error("compute arbiter " + sp + ": " + err);
  return SlotsFile{std::move(fd), std::move(*m)};
}

// The slots file locked against the other host processes' changes; unlinked: gc removed the arbiter
// meanwhile.
struct Locked {
  SlotsFile f;
  bool unlinked;
};

Result<Locked> lock_slots(const std::string& path) {
  auto f = open_slots(path, true);
  if (!f) return std::unexpected(f.error());
  if (::flock(f->fd.get(), LOCK_EX) != 0) return sys_error("cannot lock compute arbiter " + arbiter_slots_path(path));
  struct stat st {};
  const bool unlinked = ::fstat(f->fd.get(), &st) == 0 && st.st_nlink == 0;
  return Locked{std::move(*f), unlinked};
}

// A new file in a temporary beside final (which no container can reach), allocated in full and
// formatted by format; its path.
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

Result<std::string> make_lease_temp(const std::string& final) {
  const std::string tmp = text::cat(fs::dirname(final), "/.", fs::basename(final), ".tmp.", ::getpid());
  ::unlink(tmp.c_str());
  if (auto r = write_new_lease_file(tmp, final); !r) {
    ::unlink(tmp.c_str());
    return std::unexpected(r.error());
  }
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

// Notes a repair of the lease file in the slots file (status flags the GPU for a while after it).
void record_repair(gpufrac_arbiter_slots* a, unsigned what) {
  __atomic_store_n(&a->lease_repaired_what, what, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&a->lease_repairs, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&a->lease_repaired_s, static_cast<std::uint64_t>(std::time(nullptr)), __ATOMIC_SEQ_CST);
}

// Repairs the lease file in place and notes it in the (writable, open) slots file.
Result<LeaseRepair> repair_and_record(const std::string& path, const SlotsFile& slots) {
  auto r = repair_lease_file(path);
  if (r && r->what != 0) record_repair(slots.get(), r->what);
  return r;
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

// Slot i as the slots file says; its charges from its lane when that one is sane (lane).
ArbiterSlotView slot_view(const gpufrac_arbiter_slots* a, const gpufrac_arbiter_lane* lane, unsigned i,
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
  if (lane == nullptr) return v;
  v.window_ns = gf_arbiter_window_ns(lane, now_ns);
  v.charged_ns = lane->charged_ns;
  v.leases = lane->leases;
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

Result<LeaseRepair> ensure_arbiter(const std::string& path, const std::string& gpu_uuid) {
  const std::string slots = arbiter_slots_path(path);
  const bool slots_ok = fs::exists(slots) && open_slots(path, false);
  struct stat st {};
  const bool lease_there = ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (!slots_ok || !lease_there)
    if (auto d = fs::make_dirs(fs::dirname(path), 0755); !d) return std::unexpected(d.error());
  // Both made before either is linked: a full directory refuses with nothing left behind.
  std::optional<std::string> slots_tmp, lease_tmp;
  if (!slots_ok) {
    auto t = make_temp(slots, kSlotsSize, 0644, [&](const Mapping& m) { format_slots(m, gpu_uuid); });
    if (!t) return std::unexpected(t.error());
    slots_tmp = *t;
  }
  if (!lease_there) {
    auto t = make_lease_temp(path);
    if (!t) {
      if (slots_tmp) ::unlink(slots_tmp->c_str());
      return std::unexpected(t.error());
    }
    lease_tmp = *t;
  }
  if (slots_tmp)
    if (auto r = link_temp(*slots_tmp, slots, [&] { return open_slots(path, false).has_value(); }); !r) {
      if (lease_tmp) ::unlink(lease_tmp->c_str());
      return std::unexpected(r.error());
    }
  if (lease_tmp)
    if (auto r = link_temp(*lease_tmp, path,
                           [&] {
                             return read_lease_file(path, FileOwner{::geteuid(), ::getegid()}).has_value();
                           });
        !r)
      return std::unexpected(r.error());
  // A lease file a tenant resized, chmod-ed or overwrote is put back in place: the containers of the
  // GPU keep one arbiter.
  auto f = open_slots(path, true);
  if (!f) return std::unexpected(f.error());
  return repair_and_record(path, *f);
}

namespace {

// The slots file locked; when gc removed the arbiter after the caller ensured it, made again first.
Result<Locked> lock_linked(const std::string& path) {
  std::string uuid;
  {
    auto m = lock_slots(path);
    if (!m || !m->unlinked) return m;
    uuid.assign(m->f.get()->uuid, strnlen(m->f.get()->uuid, sizeof m->f.get()->uuid));
  }  // unlocked: ensure_arbiter takes it again
  if (auto r = ensure_arbiter(path, uuid); !r) return std::unexpected(r.error());
  return lock_slots(path);
}

}  // namespace

Result<std::uint64_t> attach_arbiter_slot(const std::string& path, const std::string& key, std::uint32_t weight_ppm,
                                          ComputeMode mode, ComputePriority priority) {
  if (auto k = check_lane_key(path, key); !k) return std::unexpected(k.error());
  auto m = lock_linked(path);
  if (!m) return std::unexpected(m.error());
  gf_arb arb = m->f.arb();
  const std::uint64_t token = random_token();
  const int i = gf_arbiter_setup(&arb, key.c_str(), token, weight_ppm, flags_of(mode, priority),
                                 static_cast<std::uint64_t>(std::time(nullptr)));
  if (i < 0)
    return user_error(text::cat("compute arbiter ", path, ": all ", GPUFRAC_ARBITER_SLOTS,
                                " container slots of this GPU are taken; accepted: at most ", GPUFRAC_ARBITER_SLOTS,
                                " containers with a compute share per GPU"));
  const std::uint64_t got = __atomic_load_n(&arb.slots->slots[i].token, __ATOMIC_SEQ_CST);
  if (got == token) {  // a new slot: a fresh lane (the same container again keeps its own, repaired)
    if (auto r = write_new_lane(path, key); !r) {
      gf_arbiter_release(&arb, static_cast<unsigned>(i));
      return std::unexpected(r.error());
    }
  } else if (auto r = repair_lane(path, key); !r) {
    return std::unexpected(r.error());
  }
  return got;
}

namespace {

bool key_is(const gpufrac_arbiter_slot& s, const std::string& key) {
  return strnlen(s.key, GPUFRAC_ARBITER_KEY) == key.size() && std::memcmp(s.key, key.data(), key.size()) == 0;
}

// Frees slot i and removes its lane file. 1 when it did.
unsigned free_slot(const std::string& path, const SlotsFile& f, unsigned i) {
  gf_arb arb = f.arb();
  const gpufrac_arbiter_slot& s = f.get()->slots[i];
  const std::string key(s.key, strnlen(s.key, GPUFRAC_ARBITER_KEY));
  if (!gf_arbiter_release(&arb, i)) return 0;
  remove_lane(path, key);
  return 1;
}

bool any_in_use(const gpufrac_arbiter_slots* a) {
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(a); i < n; i++)
    if (__atomic_load_n(&a->slots[i].state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_FREE) return true;
  return false;
}

// The host's note of a recent repair of the lease file (arbiter_abi.h, lease_repaired_s).
std::optional<std::string> repair_note(const gpufrac_arbiter_slots* a) {
  const std::uint64_t at = __atomic_load_n(&a->lease_repaired_s, __ATOMIC_SEQ_CST);
  const auto now = static_cast<std::uint64_t>(std::time(nullptr));
  if (at == 0 || now < at || now - at > kLeaseRepairShownS) return std::nullopt;
  const std::uint64_t what = __atomic_load_n(&a->lease_repaired_what, __ATOMIC_SEQ_CST);
  std::string parts;
  for (auto [bit, name] : {std::pair{GPUFRAC_LEASE_REPAIRED_SIZE, "size"},
                           {GPUFRAC_LEASE_REPAIRED_MODE, "mode"},
                           {GPUFRAC_LEASE_REPAIRED_OWNER, "owner"},
                           {GPUFRAC_LEASE_REPAIRED_HEADER, "header"}})
    if (what & bit) parts += (parts.empty() ? "" : ", ") + std::string(name);
  return text::cat("the host repaired its lease file's ", parts, " ", now - at, " s ago (a container changed it)");
}

}  // namespace

Result<unsigned> release_arbiter_slots(const std::string& path, const std::string& key) {
  if (!fs::exists(arbiter_slots_path(path))) return 0u;
  auto m = lock_slots(path);
  if (!m) return std::unexpected(m.error());
  const gpufrac_arbiter_slots* a = m->f.get();
  unsigned n = 0;
  for (unsigned i = 0, hw = gf_arbiter_slots_in_use(a); i < hw; i++)
    if (__atomic_load_n(&a->slots[i].state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_FREE && key_is(a->slots[i], key))
      n += free_slot(path, m->f, i);
  return n;
}

Result<ArbiterView> read_arbiter(const std::string& path, std::uint64_t now_ns) {
  auto slots = open_slots(path, false);
  if (!slots) return std::unexpected(slots.error());
  const gpufrac_arbiter_slots* a = slots->get();
  if (now_ns == 0) now_ns = monotonic_ns();
  ArbiterView v;
  v.gpu_uuid.assign(a->uuid, strnlen(a->uuid, sizeof a->uuid));
  struct stat sst {};
  const FileOwner owner =
      ::fstat(slots->fd.get(), &sst) == 0 ? FileOwner{sst.st_uid, sst.st_gid} : FileOwner{::geteuid(), ::getegid()};
  auto copy = read_lease_file(path, owner);  // a bounded copy: a tenant may resize the file at any time
  std::vector<std::string> lane_files;
  const auto lanes = read_slot_lanes(path, *a, owner.uid, owner.gid, lane_files);
  const gpufrac_arbiter* l = copy ? copy->lease.get() : nullptr;
  v.tampered =
      l != nullptr ? lease_file_problems(*a, *l, lanes.data(), now_ns) : std::vector<std::string>{copy.error().message};
  if (l != nullptr && copy->size != sizeof(gpufrac_arbiter))
    v.tampered.push_back(copy->wrong.front());  // its size first: what was read is not to be believed
  v.tampered.insert(v.tampered.end(), lane_files.begin(), lane_files.end());
  if (!v.tampered.empty()) l = nullptr;  // no figures from a tampered arbiter
  if (copy)  // a mode or owner changed now, a repair in the last minutes: flagged, the figures still good
    for (auto& why : copy->wrong)
      if (std::find(v.tampered.begin(), v.tampered.end(), why) == v.tampered.end()) v.tampered.push_back(why);
  if (auto note = repair_note(a)) v.tampered.push_back(*note);
  if (l != nullptr) {
    const std::uint64_t w = l->lease;
    v.holder = gpufrac_lease_holder(w);
    v.claimed = gpufrac_lease_claimed(w) != 0;
    v.holder_pid = l->holder_pid;
  }
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(a); i < n; i++) {
    if (__atomic_load_n(&a->slots[i].state, __ATOMIC_SEQ_CST) != GPUFRAC_ARBITER_FREE)
      v.slots.push_back(slot_view(a, l != nullptr ? &lanes[i] : nullptr, i, now_ns));
  }
  return v;
}

Result<ArbiterSweep> sweep_arbiter(const std::string& path, const std::vector<std::string>& keep,
                                   std::uint64_t min_age_s) {
  auto m = lock_slots(path);
  if (!m) return std::unexpected(m.error());
  const gpufrac_arbiter_slots* a = m->f.get();
  const auto now = static_cast<std::uint64_t>(std::time(nullptr));
  ArbiterSweep out;
  for (unsigned i = 0, n = gf_arbiter_slots_in_use(a); i < n; i++) {
    if (__atomic_load_n(&a->slots[i].state, __ATOMIC_SEQ_CST) == GPUFRAC_ARBITER_FREE) continue;
    ArbiterSlotView s = slot_view(a, nullptr, i, 0);
    if (std::find(keep.begin(), keep.end(), s.key) != keep.end() || now < s.created_s + min_age_s) continue;
    if (free_slot(path, m->f, i)) out.freed.push_back(s.key);
  }
  if (!any_in_use(a)) {  // no share left on the GPU: its arbiter goes, whatever a tenant did to it
    remove_lanes_except(path, {});
    ::unlink(path.c_str());
    ::unlink(arbiter_slots_path(path).c_str());
    out.removed = true;
    return out;
  }
  if (auto r = repair_and_record(path, m->f); r)
    out.repaired = std::move(r->phrases);
  else
    out.repaired.push_back(r.error().message);
  repair_slot_lanes(path, *a, out.repaired);
  return out;
}

}  // namespace gpufrac::limits
