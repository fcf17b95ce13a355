// Fuzzes gpufrac-dra's reading of the API server's answers: any status and body go through every
// response parser the plugin has (k8s/api_response.hpp: the bounded parse, the failure line of a
// Status; k8s/slice_list.hpp: a ResourceSliceList as the publisher lists it, one ResourceSlice as a
// GET, POST or PUT answers it; k8s/claim.hpp: a ResourceClaim as prepare reads it, on a node with
// shares, MIG instances and dynamic-MIG profile devices, and as the sync reads it). No exception
// may escape any of them. What they accept keeps its promises: a listed slice has a plain object
// name (it goes into a URL) and a generation of 0 to 2^62; a claim's share is of a device of this
// node, within its memory. Input: two bytes of status (mod 700), then the body.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "k8s/api_response.hpp"
#include "k8s/claim.hpp"
#include "k8s/dra_devices.hpp"
#include "k8s/slice_list.hpp"
#include "nvml/simulated.hpp"

using namespace gpufrac;
using namespace gpufrac::dra;

namespace {

const ClaimRef kRef{"team-a", "trainer-gpu", "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"};

Inventory machine(const char* file) {
  auto m = load_simulated_machine(std::string(GPUFRAC_SOURCE_DIR) + "/nvml/machines/" + file);
  FUZZ_CHECK(m.has_value());
  return m->inventory;
}

void check_slice(const ListedSlice& s) {
  FUZZ_CHECK(!s.name.empty() && s.name.size() <= 253);
  FUZZ_CHECK(s.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") == std::string::npos);
  FUZZ_CHECK(!s.uid.empty() && !s.resource_version.empty());
  FUZZ_CHECK(s.generation >= 0 && s.generation <= (std::int64_t{1} << 62));
  FUZZ_CHECK(s.object.is_object() && s.object.at("metadata").is_object() && s.object.at("spec").is_object());
}

void check_claim(const nlohmann::json& claim, const Inventory& inv, const MigConfig& mig) {
  auto shares = claim_shares(claim, kRef, "node-1", inv, mig);
  if (!shares) {
    FUZZ_CHECK(shares.error().message.find('\n') == std::string::npos);
    return;
  }
  for (const auto& s : *shares) {
    auto device = find_dra_device(inv, s.device, mig);
    FUZZ_CHECK(device.has_value());
    FUZZ_CHECK(s.bytes > 0 && s.bytes <= device->memory_bytes());
  }
}

void exercise(int status, std::string_view body) {
  static const Inventory kShares = machine("dgx-8gpu-mixed.yaml");
  static const Inventory kDynamic = machine("h100-80gb-mig-empty.yaml");
  MigConfig dynamic;
  dynamic.mode = MigMode::dynamic;
  auto r = read_response(status, body, kMaxListBytes);
  if (!r) return;
  FUZZ_CHECK(r->status == status && (r->body.is_null() || r->problem.empty()));
  FUZZ_CHECK(describe_failure("DELETE", "/x", *r).find('\n') == std::string::npos);
  (void)claim_gone(r->status, r->body, kRef.uid);
  auto object = object_answer(*r, "GET", "/x");
  if (!object) return;
  FUZZ_CHECK(object->is_object() && status >= 200 && status <= 299);
  if (auto slices = listed_slices(*object, "GET /list"))
    for (const auto& s : *slices) check_slice(s);
  if (auto one = listed_slice(*object, "GET /one")) check_slice(*one);
  check_claim(*object, kShares, {});
  check_claim(*object, kDynamic, dynamic);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int status = ((data[0] << 8) | data[1]) % 700;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    exercise(status, body);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "an exception escaped: %s\n", e.what());
    FUZZ_CHECK(!"no exception escapes the response parsers");
  }
  return 0;
}
