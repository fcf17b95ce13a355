#include "hook/privileges.hpp"

#include <seccomp.h>
#include <sys/prctl.h>

#include <memory>

#include "core/text.hpp"

namespace gpufrac::hook {

namespace {

struct CapFree {
  void operator()(cap_t c) const { cap_free(c); }
};
using CapPtr = std::unique_ptr<std::remove_pointer_t<cap_t>, CapFree>;

bool in_hook_set(cap_value_t c) {
  for (cap_value_t k : kHookCapabilities)
    if (k == c) return true;
  return false;
}

}  // namespace

// One prctl per capability (libcap's cap_drop_bound reads each one first, and its ambient reset
// tests each one: ~110 system calls on every hook start). The loop runs up to the kernel's last
// capability, which answers EINVAL past it, so a capability newer than these headers goes too.
Result<> restrict_bounding_set() {
  if (!CAP_IS_SUPPORTED(CAP_SETPCAP)) return {};
  CapPtr now(cap_get_proc());
  cap_flag_value_t has_setpcap = CAP_CLEAR;
  if (!now || cap_get_flag(now.get(), CAP_SETPCAP, CAP_EFFECTIVE, &has_setpcap) != 0)
    return sys_error("cannot read capabilities");
  if (has_setpcap != CAP_SET) return {};
  for (int c = 0; c < 64; ++c) {
    if (in_hook_set(c) || ::prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;
    return sys_error(text::cat("cannot drop capability ", c, " from the bounding set"));
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return sys_error("cannot clear ambient capabilities");
  return {};
}

Result<> set_effective(std::initializer_list<cap_value_t> keep) {
  CapPtr caps(cap_get_proc());
  if (!caps) return sys_error("cannot read capabilities");
  cap_clear_flag(caps.get(), CAP_EFFECTIVE);
  for (cap_value_t c : keep) {
    cap_flag_value_t permitted = CAP_CLEAR;
    cap_get_flag(caps.get(), c, CAP_PERMITTED, &permitted);
    if (permitted == CAP_SET) cap_set_flag(caps.get(), CAP_EFFECTIVE, 1, &c, CAP_SET);
  }
  if (cap_set_proc(caps.get()) != 0) return sys_error("cannot change effective capabilities");
  return {};
}

Result<> keep_only(std::initializer_list<cap_value_t> keep) {
  CapPtr now(cap_get_proc());
  CapPtr next(cap_init());
  if (!now || !next) return sys_error("cannot read capabilities");
  for (cap_value_t c : keep) {
    cap_flag_value_t permitted = CAP_CLEAR;
    cap_get_flag(now.get(), c, CAP_PERMITTED, &permitted);
    if (permitted != CAP_SET) continue;  // never raise; a non-root hook fails later with EPERM
    cap_set_flag(next.get(), CAP_PERMITTED, 1, &c, CAP_SET);
    cap_set_flag(next.get(), CAP_EFFECTIVE, 1, &c, CAP_SET);
  }
  if (cap_set_proc(next.get()) != 0) return sys_error("cannot drop capabilities");
  return {};
}

Result<> install_rootfs_seccomp() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (!ctx) return internal_error("cannot create a seccomp filter");
  std::unique_ptr<void, void (*)(void*)> guard(ctx, [](void* c) { seccomp_release(c); });
  static constexpr const char* kAllowed[] = {
      "openat",         "openat2",      "close",         "fstat",  "newfstatat", "statx",   "mkdirat",
      "fcntl",          "move_mount",   "mount_setattr", "read",   "write",      "lseek",   "exit",
      "exit_group",     "brk",          "mmap",          "munmap", "mremap",     "madvise", "mprotect",
      "rt_sigprocmask", "rt_sigreturn", "sigaltstack",   "futex",  "getpid",     "gettid",  "clock_gettime",
      "getrandom",      "fstatfs"};
  for (const char* name : kAllowed) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) != 0)
      return internal_error(std::string("cannot allow syscall ") + name + " in the seccomp filter");
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return sys_error("cannot set no_new_privs");
  if (int rc = seccomp_load(ctx); rc != 0) return sys_error("cannot load the seccomp filter", -rc);
  return {};
}

}  // namespace gpufrac::hook
