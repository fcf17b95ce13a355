// Test helper around the host library's compute arbiter (limits/host/arbiter_file.hpp):
//   share DIR NAME [--region PATH] UUID=BYTES:PPM:MODE:PRIO...
//                       a container NAME with compute shares: DIR/NAME.limits, its region DIR/NAME.usage
//                       (named PATH in the limit file: where a container sees it), the arbiters
//                       DIR/compute/<uuid> (created if absent) and its slots (key NAME); none for a
//                       weight of the whole GPU (1000000)
//   show ARBITER        "lease holder=<slot+1> claimed=<0|1> pid=<pid>", then per slot
//                       "slot <i> key=<key> weight=<ppm> achieved_ppm=<ppm> leases=<n> charged_ns=<ns>", then
//                       "tampered: <why>" per problem the host finds in the lease file
//   holder ARBITER      the pid of the process holding the lease, or 0
//   release ARBITER KEY "released=<n>"
//   set ARBITER FIELD VALUE   writes one field of the lease file as a (hostile or testing) process
//                       could: lease, preempt, vclock, busy, busy_until, or slot.<i>.<vtime|seen>; or, as only
//                       the host can, of the slots file: lease_ms grace_ms idle_us inflight_us ... (params),
//                       high_water, slot.<i>.<weight|flags|state>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/fs.hpp"
#include "gpufrac/arbiter_abi.h"
#include "limits/host/arbiter_file.hpp"
#include "limits/host/arbiter_lanes.hpp"
#include "limits/host/limit_file.hpp"
#include "limits/host/region_file.hpp"

namespace {

using namespace gpufrac;

int fail(const Error& e) {
  std::fprintf(stderr, "gpufrac: %s\n", e.message.c_str());
  return 1;
}

// UUID=BYTES:PPM:MODE:PRIO (PPM 0: no compute share on that device).
limits::DeviceLimit device_of(const std::string& a) {
  limits::DeviceLimit d;
  const auto eq = a.find('=');
  d.uuid = a.substr(0, eq);
  char mode[16] = "fair", prio[16] = "normal";
  unsigned long long bytes = 0;
  unsigned ppm = 0;
  std::sscanf(a.c_str() + eq + 1, "%llu:%u:%15[^:]:%15s", &bytes, &ppm, mode, prio);
  d.bytes = bytes;
  d.compute_ppm = ppm;
  d.compute_mode = std::strcmp(mode, "strict") == 0 ? ComputeMode::strict : ComputeMode::fair;
  d.priority = std::strcmp(prio, "high") == 0 ? ComputePriority::high : ComputePriority::normal;
  return d;
}

int share(int argc, char** argv) {
  const std::string dir = argv[2], name = argv[3], region = dir + "/" + name + ".usage";
  const bool renamed = argc > 5 && std::strcmp(argv[4], "--region") == 0;
  limits::LimitFile f{name, renamed ? argv[5] : region, {}};
  for (int i = renamed ? 6 : 4; i < argc; i++) {
    limits::DeviceLimit d = device_of(argv[i]);
    if (d.compute_ppm != 0 && d.compute_ppm < GPUFRAC_ARBITER_WHOLE) {  // as attach_compute_slots: a whole GPU has none
      const std::string path = dir + "/compute/" + d.uuid;
      if (auto r = limits::ensure_arbiter(path, d.uuid); !r) return fail(r.error());
      auto token = limits::attach_arbiter_slot(path, name, d.compute_ppm, d.compute_mode, d.priority);
      if (!token) return fail(token.error());
      d.compute_token = *token;
    }
    f.devices.push_back(d);
  }
  if (auto r = limits::create_region(region, f); !r) return fail(r.error());
  if (auto w = fs::write_file_atomic(dir + "/" + name + ".limits", limits::render_limit_file(f), 0644); !w)
    return fail(w.error());
  return 0;
}

int show(const char* path, bool holder_only) {
  auto v = limits::read_arbiter(path);
  if (!v) return fail(v.error());
  if (holder_only) return std::printf("%u\n", v->claimed ? v->holder_pid : 0u) < 0;
  std::printf("lease holder=%u claimed=%d pid=%u\n", v->holder, v->claimed ? 1 : 0, v->holder_pid);
  for (const auto& s : v->slots)
    std::printf("slot %u key=%s weight=%u achieved_ppm=%u leases=%llu charged_ns=%llu\n", s.index, s.key.c_str(),
                s.weight_ppm, s.achieved_ppm(), static_cast<unsigned long long>(s.leases),
                static_cast<unsigned long long>(s.charged_ns));
  for (const auto& why : v->tampered) std::printf("tampered: %s\n", why.c_str());
  return 0;
}

template <class T>
T* map_rw(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR);
  void* p = fd < 0 ? MAP_FAILED : ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fd >= 0) ::close(fd);
  if (p == MAP_FAILED) {
    std::perror(path.c_str());
    std::exit(2);
  }
  return static_cast<T*>(p);
}

template <class T>
void put(T* field, unsigned long long v) {
  __atomic_store_n(field, static_cast<T>(v), __ATOMIC_SEQ_CST);
}

int set(const char* path, const std::string& field, unsigned long long v) {
  auto* a = map_rw<gpufrac_arbiter>(path);
  auto* s = map_rw<gpufrac_arbiter_slots>(limits::arbiter_slots_path(path));
  gpufrac_arbiter_params& p = s->params;
  const std::pair<const char*, std::uint32_t*> words[] = {{"lease_ms", &p.lease_ms},
                                                          {"grace_ms", &p.grace_ms},
                                                          {"claim_ms", &p.claim_ms},
                                                          {"idle_us", &p.idle_us},
                                                          {"heartbeat_us", &p.heartbeat_us},
                                                          {"runnable_us", &p.runnable_us},
                                                          {"inflight_us", &p.inflight_us},
                                                          {"credit_ms", &p.credit_ms},
                                                          {"busy_ms", &p.busy_ms},
                                                          {"preempt", &a->preempt},
                                                          {"busy", &a->busy},
                                                          {"high_water", &s->slot_high_water}};
  for (const auto& [name, ptr] : words)
    if (field == name) return put(ptr, v), 0;
  if (field == "lease") return put(&a->lease, v), 0;
  if (field == "vclock") return put(&a->vclock, v), 0;
  if (field == "busy_until") return put(&a->busy_until_ns, v), 0;
  unsigned i = 0;
  char what[16] = "";
  if (std::sscanf(field.c_str(), "slot.%u.%15s", &i, what) != 2 || i >= GPUFRAC_ARBITER_SLOTS) return 2;
  gpufrac_arbiter_slot& slot = s->slots[i];
  if (std::strcmp(what, "weight") == 0) return put(&slot.weight_ppm, v), 0;
  if (std::strcmp(what, "flags") == 0) return put(&slot.flags, v), 0;
  if (std::strcmp(what, "state") == 0) return put(&slot.state, v), 0;
  // A lane: the slot's own lane file (its container writes it; a missing one is left alone).
  const std::string key(slot.key, strnlen(slot.key, GPUFRAC_ARBITER_KEY));
  const std::string lane_path = limits::arbiter_lane_path(path, key);
  if (key.empty() || ::access(lane_path.c_str(), W_OK) != 0) return 0;
  auto* lane = map_rw<gpufrac_arbiter_lane>(lane_path);
  if (std::strcmp(what, "vtime") == 0) return put(&lane->vtime, v), 0;
  if (std::strcmp(what, "seen") == 0) return put(&lane->seen_ns, v), 0;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "share" && argc >= 5) return share(argc, argv);
  if ((cmd == "show" || cmd == "holder") && argc == 3) return show(argv[2], cmd == "holder");
  if (cmd == "release" && argc == 4) {
    auto n = limits::release_arbiter_slots(argv[2], argv[3]);
    if (!n) return fail(n.error());
    return std::printf("released=%u\n", *n) < 0;
  }
  if (cmd == "set" && argc == 5) return set(argv[2], argv[3], std::strtoull(argv[4], nullptr, 0));
  std::fprintf(stderr, "usage: arbiter_tool share|show|holder|release|set ... (see arbiter_tool.cpp)\n");
  return 2;
}
