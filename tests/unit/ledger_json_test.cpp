#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger_canonical.hpp"
#include "core/ledger/ledger_json.hpp"
#include "ledger_fixture.hpp"

namespace gpufrac {
namespace {

LedgerEntry sample() {
  return testing::sample_entry();
}

LedgerEntry sample_mig() {
  LedgerEntry e = sample();
  e.container_id = "c2";
  e.device_key = "gpufrac.io/gpu=0:9";
  e.device_uuid = "MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e";
  e.mig = MigRef{9, 0, "1g.10gb"};
  e.exclusive = true;
  e.source = BookingSource::cdi;
  e.pid = 0;
  e.pid_start = 0;
  return e;
}

std::string with_entry(const std::function<void(nlohmann::json&)>& edit) {
  auto doc = nlohmann::json::parse(ledger_to_json(LedgerState{{sample()}}));
  edit(doc["entries"][0]);
  return doc.dump();
}

std::string load_error(const std::string& text) {
  auto r = parse_ledger(text, "ledger.json");
  EXPECT_FALSE(r);
  if (r) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::internal);
  return r.error().message;
}

TEST(LedgerJson, RoundTrips) {
  LedgerState s{{sample(), sample_mig()}};
  auto text = ledger_to_json(s);
  auto back = parse_ledger(text, "ledger.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, s);
  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["entries"][1]["mig"]["profile"], "1g.10gb");
  EXPECT_EQ(doc["entries"][1]["source"], "cdi");
  EXPECT_TRUE(doc["entries"][0]["mig"].is_null());
  EXPECT_EQ(*parse_ledger(R"({"version": 1, "entries": []})", "x"), LedgerState{});
}

TEST(LedgerJson, RefusesOtherDocuments) {
  EXPECT_EQ(load_error(""), "ledger.json: not valid JSON; move it away and run gpufrac gc");
  EXPECT_EQ(load_error("{\"version\":1,\"entries\":[]"),
            "ledger.json: not valid JSON; move it away and run gpufrac gc");
  EXPECT_EQ(load_error("[]"), "ledger.json: not a gpufrac ledger; expected {\"version\": 1, \"entries\": [...]}");
  EXPECT_EQ(load_error(R"({"version": 8, "entries": []})"),
            "ledger.json: ledger version \"8\" is not 1 to 7; it was written by another gpufrac version");
  EXPECT_EQ(load_error(R"({"version": "1", "entries": []})"),
            "ledger.json: ledger version \"\\x221\\x22\" is not 1 to 7; it was written by another gpufrac "
            "version");
  EXPECT_EQ(load_error(R"({"version": 1, "entries": [], "x": 0})"),
            "ledger.json: unknown top-level key; expected version and entries");
  EXPECT_EQ(load_error(R"({"version": 1, "entries": {}})"), "ledger.json: entries must be an array of at most 65536");
}

TEST(LedgerJson, RefusesDamagedEntries) {
  EXPECT_EQ(load_error(with_entry([](auto& e) { e.erase("pid"); })), "ledger.json: entries[0].pid: missing");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["pid"] = -1; })),
            "ledger.json: entries[0].pid: must be an integer 0-4194304");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["bytes"] = 1.5; })),
            "ledger.json: entries[0].bytes: must be an integer 0-18446744073709551615");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["exclusive"] = 1; })),
            "ledger.json: entries[0].exclusive: must be true or false");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["extra"] = 1; })), "ledger.json: entries[0]: unknown key \"extra\"");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["container_id"] = "../etc"; })),
            "ledger.json: entries[0].container_id: is not a valid container id");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["request"] = "a\nb"; })),
            "ledger.json: entries[0].request: must be printable ASCII of at most 512 bytes");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["source"] = "cli"; })),
            "ledger.json: entries[0].source: must be hook, wrapper, cdi or dra");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["device_uuid"] = "MIG-x"; })),
            "ledger.json: entries[0].device_uuid: must be GPU-<uuid>, or MIG-<uuid> with mig");
  EXPECT_EQ(load_error(with_entry([](auto& e) {
              e["mig"] = {{"gi", 1}};
            })),
            "ledger.json: entries[0].mig: must be null or {gi, ci, profile}");
  EXPECT_EQ(load_error(with_entry([](auto& e) {
              e["mig"] = {{"gi", 1}, {"ci", "0"}, {"profile", "x"}};
            })),
            "ledger.json: entries[0].mig: entries[0].mig.ci: must be an integer 0-4294967295");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e["pid"] = 0; })),
            "ledger.json: entries[0].pid_start: must be 0 while pid is 0");
  EXPECT_EQ(load_error(with_entry([](auto& e) { e = 5; })), "ledger.json: entries[0]: must be an object");
}

TEST(LedgerJson, WritesOneEntryPerLine) {
  EXPECT_EQ(ledger_to_json(LedgerState{}), "{\"version\":1,\"entries\":[\n]}\n");
  EXPECT_EQ(ledger_to_json(LedgerState{{sample_mig()}}),
            "{\"version\":1,\"entries\":[\n"
            "{\"container_id\":\"c2\",\"device_key\":\"gpufrac.io/gpu=0:9\",\"device_uuid\":"
            "\"MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e\",\"gpu_index\":0,\"gpu_uuid\":"
            "\"GPU-d7dabd4b-76ee-eb23-0267-a749de0199b5\",\"mig\":{\"gi\":9,\"ci\":0,\"profile\":\"1g.10gb\"},"
            "\"bytes\":10626269184,\"exclusive\":true,\"request\":\"fraction=0.25\",\"source\":\"cdi\",\"pid\":0,"
            "\"pid_start\":0,\"created\":1700000000}\n]}\n");
}

TEST(LedgerJson, EscapesWhatItCannotStore) {
  LedgerEntry e = sample();
  e.request = "a\"b\\c\x01\xff";
  auto text = ledger_to_json(LedgerState{{e}});
  auto doc = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << text;
  EXPECT_EQ(doc["entries"][0]["request"], "a\"b\\c\x01\u00ff");
  e.request = "a\"b\\c";
  EXPECT_EQ(*parse_ledger(ledger_to_json(LedgerState{{e}}), "x"), LedgerState{{e}});
}

TEST(LedgerJson, RefusesADoubleBooking) {
  std::string text = ledger_to_json(LedgerState{{sample(), sample()}});
  EXPECT_EQ(load_error(text), "ledger.json: entries[1]: a second booking of container c1 device key \"\"");
}

// The fast reader takes exactly what the writer writes and gives what the strict reader gives;
// anything else is left to the strict reader (the fuzzer holds the two to the same answer).
TEST(LedgerCanonical, ReadsTheWritersLayoutAndNothingElse) {
  LedgerEntry claim = sample();
  claim.container_id = "2f9c3a52-7d1e-4b6a-9c1f-5a0e8d7b6c41";
  claim.source = BookingSource::dra;
  claim.claim = "team-a/q0";
  claim.pid = 0;
  claim.pid_start = 0;
  claim.instance = "dra";
  LedgerEntry escaped = sample();
  escaped.container_id = "c3";
  escaped.request = "a\"b\\c";
  for (const LedgerState& state :
       {LedgerState{}, LedgerState{{sample(), sample_mig(), escaped}},
        LedgerState{{sample()}, {MigIdleRecord{"MIG-7e3ba276-cba9-efe9-9fe8-6c419f56af4e", sample().gpu_uuid, 5}}},
        LedgerState{{sample(), claim}}}) {
    const std::string text = ledger_to_json(state);
    auto fast = scan_canonical_ledger(text);
    ASSERT_TRUE(fast.has_value()) << text;
    EXPECT_EQ(*fast, state);
    EXPECT_EQ(*parse_ledger_json(text, "x"), state);
  }
  const std::string text = ledger_to_json(LedgerState{{sample(), sample_mig()}});
  std::string spaced = text;
  spaced.insert(text.find("\"bytes\""), " ");
  EXPECT_FALSE(scan_canonical_ledger(spaced));
  EXPECT_EQ(*parse_ledger(spaced, "x"), (LedgerState{{sample(), sample_mig()}}));  // the strict reader takes it
  EXPECT_FALSE(scan_canonical_ledger(text.substr(0, text.size() - 1)));
  EXPECT_FALSE(scan_canonical_ledger("{\"version\":3,\"entries\":[\n],\"mig_idle\":[\n]}\n"))
      << "version 3 without a claim is not what the writer writes";
}

TEST(LedgerCanonical, BadValuesInTheWritersLayoutGetTheStrictReadersError) {
  LedgerEntry bad = sample();
  bad.container_id = "../etc";
  std::string text = ledger_to_json(LedgerState{{bad}});
  EXPECT_FALSE(scan_canonical_ledger(text));
  EXPECT_EQ(load_error(text), "ledger.json: entries[0].container_id: is not a valid container id");
  bad = sample();
  bad.pid = 0;  // pending, with a start time
  EXPECT_EQ(load_error(ledger_to_json(LedgerState{{bad}})),
            "ledger.json: entries[0].pid_start: must be 0 while pid is 0");
  bad = sample();
  bad.pid = kMaxPid + 1;
  EXPECT_EQ(load_error(ledger_to_json(LedgerState{{bad}})),
            "ledger.json: entries[0].pid: must be an integer 0-4194304");
  EXPECT_FALSE(scan_canonical_ledger(ledger_to_json(LedgerState{{sample(), sample()}})));
  LedgerState two_records{{}, {MigIdleRecord{"MIG-a", "GPU-b", 1}, MigIdleRecord{"MIG-a", "GPU-b", 2}}};
  EXPECT_FALSE(scan_canonical_ledger(ledger_to_json(two_records)));
  EXPECT_EQ(load_error(ledger_to_json(two_records)), "ledger.json: mig_idle[1]: a second record of MIG-a");
}

}  // namespace
}  // namespace gpufrac
