#include "hook/ld_cache_update.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/driver/elf_info.hpp"
#include "core/driver/ld_cache.hpp"
#include "core/fs.hpp"
#include "core/text.hpp"
#include "hook/nobody_exec.hpp"
#include "hook/privileges.hpp"

namespace gpufrac::hook {

namespace {

constexpr std::size_t kMaxCacheBytes = 64u << 20;
constexpr std::uint64_t kMaxProgramBytes = 64u << 20;

Result<> check(bool ok, const std::string& what) {
  if (!ok) return sys_error(what);
  return {};
}

// Steps 1-2 in the child: a private copy of the container's mount namespace, pivoted into its root.
Result<> enter_private_root(int ns_fd, const std::string& rootfs) {
  if (auto r = check(::setns(ns_fd, CLONE_NEWNS) == 0, "cannot join the container's mount namespace"); !r) return r;
  if (auto r = check(::unshare(CLONE_NEWNS) == 0, "cannot make a private mount namespace"); !r) return r;
  if (auto r = check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "cannot make mounts private");
      !r)
    return r;
  fs::UniqueFd tree(::open_tree(AT_FDCWD, rootfs.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
  if (!tree) return sys_error("cannot open the container root " + rootfs);
  if (::move_mount(tree.get(), "", AT_FDCWD, rootfs.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0 ||
      ::chdir(rootfs.c_str()) != 0)
    return sys_error("cannot mount the container root " + rootfs);
  if (::syscall(SYS_pivot_root, ".", ".") != 0 || ::umount2(".", MNT_DETACH) != 0 || ::chdir("/") != 0)
    return sys_error("cannot pivot into the container root");
  return {};
}

// A scratch tmpfs owned by nobody, holding our ld.so.conf (written through its fd), never attached
// anywhere: ldconfig runs with its working directory there and names its files relative to it, and
// the cache is read back through the fd. So no file is written or read by a path that a directory
// of the rootfs exchanged while the hook runs could send elsewhere (a host directory that reached
// the container's namespace).
Result<fs::UniqueFd> make_scratch(const std::string& conf) {
  fs::UniqueFd fsfd(::fsopen("tmpfs", FSOPEN_CLOEXEC));
  const std::string uid = text::cat(kNobody);
  if (!fsfd || ::fsconfig(fsfd.get(), FSCONFIG_SET_STRING, "size", "128m", 0) != 0 ||
      ::fsconfig(fsfd.get(), FSCONFIG_SET_STRING, "uid", uid.c_str(), 0) != 0 ||
      ::fsconfig(fsfd.get(), FSCONFIG_SET_STRING, "gid", uid.c_str(), 0) != 0 ||
      ::fsconfig(fsfd.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return sys_error("cannot create the library cache's scratch tmpfs");
  fs::UniqueFd mnt(::fsmount(fsfd.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  if (!mnt) return sys_error("cannot mount the library cache's scratch tmpfs");
  fs::UniqueFd file(::openat(mnt.get(), "ld.so.conf", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!file) return sys_error("cannot write ld.so.conf in the library cache's scratch tmpfs");
  if (auto r = fs::write_all(file.get(), conf, "ld.so.conf"); !r) return std::unexpected(r.error());
  if (::fchdir(mnt.get()) != 0) return sys_error("cannot enter the library cache's scratch tmpfs");
  return mnt;
}

// ldconfig's output, read through the scratch tmpfs's fd: a regular file, bounded.
Result<std::string> read_scratch_cache(int scratch_fd) {
  fs::UniqueFd fd(::openat(scratch_fd, "ld.so.cache", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return sys_error("cannot read the cache ldconfig wrote");
  if (!S_ISREG(st.st_mode)) return internal_error("the cache ldconfig wrote is not a regular file");
  return fs::read_fd(fd.get(), kMaxCacheBytes, "the cache ldconfig wrote");
}

// Runs ldconfig as nobody with no capabilities and an empty environment, in the scratch tmpfs (its
// working directory); its output is the error.
Result<> run_ldconfig(int program_fd) {
  static const char* const argv[] = {"ldconfig", "-i", "-X", "-f", "ld.so.conf", "-C", "ld.so.cache", nullptr};
  auto run = run_as_nobody(program_fd, argv);
  if (!run) return std::unexpected(run.error());
  if (WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0) return {};
  const std::string line = run->output.substr(0, run->output.find('\n'));
  return internal_error(text::cat("the host's ldconfig failed in the container root (status ", run->status, ")",
                                  line.empty() ? "" : ": " + line));
}

// /etc/ld.so.cache replaced by rename inside /etc (a symlink there is replaced, never followed).
// Returns false when the root is read-only.
Result<bool> install_in_place(const std::string& bytes) {
  ::mkdir("/etc", 0755);
  fs::UniqueFd etc(::open("/etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!etc && errno == EROFS) return false;
  if (!etc) return sys_error("the container's /etc (a symlink or not a directory?)");
  // Per process: containers sharing one rootfs may write at the same time (rename is atomic).
  const std::string name = text::cat(".ld.so.cache.gpufrac-", ::getpid(), "~");
  const char* tmp = name.c_str();
  ::unlinkat(etc.get(), tmp, 0);
  fs::UniqueFd fd(::openat(etc.get(), tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd && errno == EROFS) return false;
  if (!fd) return sys_error("cannot write the container's /etc/ld.so.cache");
  if (auto r = fs::write_all(fd.get(), bytes, "/etc/ld.so.cache"); !r) return std::unexpected(r.error());
  // No fsync: the cache lives as long as the container's root; after a host crash the container's
  // next start writes it again (and the loader ignores a cache that does not parse).
  if (::renameat(etc.get(), tmp, etc.get(), "ld.so.cache") != 0) {
    ::unlinkat(etc.get(), tmp, 0);
    return sys_error("cannot replace the container's /etc/ld.so.cache");
  }
  return true;
}

// Everything the child does; the payload is "P" (in place) or "B" + the cache bytes.
Result<std::string> child_steps(int ns_fd, int program_fd, const LdCacheJob& job) {
  if (auto r = keep_only({CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_SETUID, CAP_SETGID, CAP_DAC_OVERRIDE}); !r)
    return std::unexpected(r.error());
  if (auto r = enter_private_root(ns_fd, job.rootfs); !r) return std::unexpected(r.error());
  struct stat st {};
  const bool image_conf = ::stat("/etc/ld.so.conf", &st) == 0 && S_ISREG(st.st_mode);
  auto scratch = make_scratch(container_ld_so_conf(job.driver_dirs, image_conf));
  if (!scratch) return std::unexpected(scratch.error());
  if (auto r = run_ldconfig(program_fd); !r) return std::unexpected(r.error());
  auto bytes = read_scratch_cache(scratch->get());
  if (!bytes) return std::unexpected(bytes.error());
  if (job.read_only_root) return "B" + *bytes;
  auto placed = install_in_place(*bytes);
  if (!placed) return std::unexpected(placed.error());
  return *placed ? std::string("P") : "B" + *bytes;
}

[[noreturn]] void child_main(int ns_fd, int out_fd, int program_fd, const LdCacheJob& job) {
  auto r = child_steps(ns_fd, program_fd, job);
  const std::string reply = r ? "O" + *r : "E" + r.error().message;
  ::_exit(fs::write_all(out_fd, reply, "library cache pipe") ? 0 : 2);
}

// A sealed memfd holding the program's bytes, copied in the kernel (sendfile): no user-space
// buffer, so no megabyte of fresh pages to fault in on every container start.
Result<fs::UniqueFd> sealed_copy(int fd, std::size_t size, const std::string& path) {
  fs::UniqueFd mem(::memfd_create("ldconfig", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!mem) return sys_error("cannot create a memfd for " + path);
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::sendfile(mem.get(), fd, nullptr, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot copy " + path);
    if (n == 0) return internal_error(path + " shrank while it was copied");
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(mem.get(), 0555) != 0 ||
      ::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return sys_error("cannot seal the memfd of " + path);
  return mem;
}

// The program must be static: it runs inside the container root, whose loader is the image's.
Result<> check_static(int mem, std::size_t size, const std::string& path) {
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, mem, 0);
  if (map == MAP_FAILED) return sys_error("cannot map the copy of " + path);
  auto elf = parse_elf(std::string_view(static_cast<const char*>(map), size));
  ::munmap(map, size);
  if (!elf) return std::unexpected(elf.error().wrap(path));
  if (!elf->is_static())
    return internal_error(path + " is dynamically linked; gpufrac runs only a static ldconfig inside a container");
  return {};
}

}  // namespace

std::string container_ld_so_conf(const std::vector<std::string>& driver_dirs, bool image_has_conf) {
  std::string out = "# written by gpufrac-hook: the driver's libraries first, then the image's own\n";
  for (const auto& d : driver_dirs) out += d + "\n";
  if (image_has_conf) out += "include /etc/ld.so.conf\n";
  for (const char* d :
       {"/usr/local/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"})
    out += std::string(d) + "\n";
  return out;
}

std::string host_ldconfig(const std::string& sbin) {
  const std::string real = sbin + "/ldconfig.real";
  struct stat st {};
  if (::stat(real.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return real;
  return sbin + "/ldconfig";
}

Result<int> sealed_static_program(const std::string& path) {
  fs::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return sys_error("cannot open " + path);
  if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
    return internal_error(text::cat(path, " is not a regular file owned by root and writable by root alone (owner ",
                                    st.st_uid, ", mode ", text::format_mode(st.st_mode & 07777), ")"));
  if (st.st_size <= 0 || static_cast<std::uint64_t>(st.st_size) > kMaxProgramBytes)
    return internal_error(
        text::cat(path, ": ", st.st_size, " bytes; gpufrac runs a program of 1 byte to ", kMaxProgramBytes, " bytes"));
  auto mem = sealed_copy(fd.get(), static_cast<std::size_t>(st.st_size), path);
  if (!mem) return std::unexpected(mem.error());
  // Checked on the sealed copy: what runs is exactly what was checked.
  if (auto r = check_static(mem->get(), static_cast<std::size_t>(st.st_size), path); !r)
    return std::unexpected(r.error());
  return mem->release();
}

Result<LdCacheOutcome> update_container_ld_cache(const LdCacheJob& job) {
  auto program = sealed_static_program(job.ldconfig);
  if (!program) return std::unexpected(program.error());
  fs::UniqueFd prog(*program);
  fs::UniqueFd ns(::open(job.mnt_ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return sys_error("cannot open " + job.mnt_ns_path);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error("cannot create a pipe");
  fs::UniqueFd rd(fds[0]), wr(fds[1]);
  const pid_t child = ::fork();
  if (child < 0) return sys_error("cannot fork");
  if (child == 0) child_main(ns.get(), wr.get(), prog.get(), job);
  wr = fs::UniqueFd();
  auto reply = fs::read_fd(rd.get(), kMaxCacheBytes + 1, "library cache pipe");
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!reply || reply->empty()) return internal_error(text::cat("the library cache helper died (status ", status, ")"));
  if ((*reply)[0] == 'E') return internal_error("container library cache: " + reply->substr(1));
  if (reply->size() >= 2 && (*reply)[1] == 'P') return LdCacheOutcome{true, ""};
  LdCacheOutcome out{false, reply->substr(2)};
  if (auto parsed = parse_ld_cache(out.bytes); !parsed)
    return internal_error("the container's new library cache does not parse: " + parsed.error().message);
  return out;
}

}  // namespace gpufrac::hook
