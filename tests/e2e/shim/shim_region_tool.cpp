// Test helper around the host library (limits/host) and the raw region layout:
//   create LIMITS REGION CONTAINER UUID=BYTES...  render the limit file and create the region
//   usage REGION [PROC_ROOT]                      read_region_usage: "live=N dead=M" + one line per device
//   reclaim REGION                                reclaim_region: "reclaimed=N"
//   raw REGION                                    every slot's bytes regardless of owner: "hw=H dev0=B0 dev1=B1"
//   set-slot REGION INDEX PID START STATE DEV BYTES   write one slot as a process would have left it
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/fs.hpp"
#include "gpufrac/limits_abi.h"
#include "limits/host/limit_file.hpp"
#include "limits/host/region_file.hpp"

namespace {

using namespace gpufrac;

int fail(const Error& e) {
  std::fprintf(stderr, "gpufrac: %s\n", e.message.c_str());
  return 1;
}

int create(int argc, char** argv) {
  limits::LimitFile f{argv[4], argv[3], {}};
  for (int i = 5; i < argc; i++) {
    std::string a = argv[i];
    auto eq = a.find('=');
    f.devices.push_back({a.substr(0, eq), std::strtoull(a.c_str() + eq + 1, nullptr, 10)});
  }
  if (auto w = fs::write_file_atomic(argv[2], limits::render_limit_file(f), 0644); !w) return fail(w.error());
  if (auto r = limits::create_region(argv[3], f); !r) return fail(r.error());
  return 0;
}

int usage(const std::string& region, const std::string& proc_root) {
  auto u = limits::read_region_usage(region, proc_root);
  if (!u) return fail(u.error());
  std::printf("live=%u dead=%u\n", u->live_processes, u->dead_slots);
  for (std::size_t i = 0; i < u->devices.size(); i++) {
    const auto& d = u->devices[i];
    std::printf("device %zu %s used=%llu stale=%llu limit=%llu\n", i, d.uuid.c_str(), (unsigned long long)d.used,
                (unsigned long long)d.stale, (unsigned long long)d.limit);
  }
  return 0;
}

gpufrac_region* map_rw(const char* path) {
  int fd = ::open(path, O_RDWR);
  void* p = fd < 0 ? MAP_FAILED : ::mmap(nullptr, sizeof(gpufrac_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fd >= 0) ::close(fd);
  if (p == MAP_FAILED) {
    std::perror(path);
    std::exit(2);
  }
  return static_cast<gpufrac_region*>(p);
}

int raw(const char* path) {
  gpufrac_region* r = map_rw(path);
  std::uint32_t hw = __atomic_load_n(&r->slot_high_water, __ATOMIC_SEQ_CST);
  std::printf("hw=%u", hw);
  for (int d = 0; d < 2; d++) {
    unsigned long long sum = 0;
    for (std::uint32_t i = 0; i < hw && i < GPUFRAC_MAX_SLOTS; i++)
      sum += __atomic_load_n(&r->slots[i].used[d], __ATOMIC_SEQ_CST);
    std::printf(" dev%d=%llu", d, sum);
  }
  std::printf("\n");
  return 0;
}

int set_slot(char** argv) {
  gpufrac_region* r = map_rw(argv[2]);
  const unsigned i = std::strtoul(argv[3], nullptr, 10);
  const std::uint64_t owner = gpufrac_owner(std::strtoull(argv[4], nullptr, 10), std::strtoull(argv[5], nullptr, 10),
                                            std::strtoull(argv[6], nullptr, 10));
  __atomic_store_n(&r->slots[i].used[std::strtoul(argv[7], nullptr, 10)], std::strtoull(argv[8], nullptr, 10),
                   __ATOMIC_SEQ_CST);
  __atomic_store_n(&r->slots[i].owner, owner, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&r->slot_high_water, __ATOMIC_SEQ_CST) <= i)
    __atomic_store_n(&r->slot_high_water, i + 1, __ATOMIC_SEQ_CST);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "create" && argc >= 5) return create(argc, argv);
  if (cmd == "usage" && argc >= 3) return usage(argv[2], argc > 3 ? argv[3] : "/proc");
  if (cmd == "reclaim" && argc == 3) {
    auto n = gpufrac::limits::reclaim_region(argv[2]);
    if (!n) return fail(n.error());
    std::printf("reclaimed=%u\n", *n);
    return 0;
  }
  if (cmd == "raw" && argc == 3) return raw(argv[2]);
  if (cmd == "set-slot" && argc == 9) return set_slot(argv);
  std::fprintf(stderr, "usage: shim_region_tool create|usage|reclaim|raw|set-slot ...\n");
  return 2;
}
