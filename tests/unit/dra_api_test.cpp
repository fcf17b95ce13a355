// gpufrac-dra's reading of the API server's answers (k8s/api_response.hpp, k8s/slice_list.hpp,
// claim_gone) and what its resync loop logs (k8s/publish_state.hpp): every answer, cut short, of
// the wrong types, without a field or too large, is a value, never an exception.
#include <gtest/gtest.h>

#include "k8s/api_response.hpp"
#include "k8s/claim.hpp"
#include "k8s/publish_state.hpp"
#include "k8s/slice_list.hpp"
#include "k8s/slice_publisher.hpp"

namespace gpufrac::dra {
namespace {

using json = nlohmann::json;

const std::string kList = "GET /apis/resource.k8s.io/v1/resourceslices";

json slice(const std::string& name, json generation = 3) {
  return {{"metadata", {{"name", name}, {"uid", "u-" + name}, {"resourceVersion", "17"}}},
          {"spec", {{"driver", "gpufrac.io"}, {"pool", {{"name", "node-1"}, {"generation", generation}}}}}};
}

std::string list_error(const json& list) {
  auto r = listed_slices(list, kList);
  EXPECT_FALSE(r) << list.dump();
  return r ? "" : r.error().message;
}

TEST(DraApiResponse, TheBodyIsBoundedAndParsedWithoutExceptions) {
  auto ok = read_response(200, R"({"kind":"ResourceSliceList","items":[]})", 64);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body["kind"], "ResourceSliceList");
  EXPECT_EQ(ok->problem, "");
  auto large = read_response(200, std::string(65, ' '), 64);
  ASSERT_FALSE(large);
  EXPECT_EQ(large.error().message, "HTTP 200: a body of 65 bytes; at most 64 bytes are accepted");
  EXPECT_EQ(read_response(0, "", 64).error().message, "HTTP status 0 is not one; an HTTP status is 100 to 599");
  EXPECT_FALSE(read_response(600, "", 64));
  auto empty = read_response(204, "", 64);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->body.is_null());
  EXPECT_EQ(empty->problem, "");
}

TEST(DraApiResponse, AnAnswerCutShortOrNotJsonIsKeptAsItsProblem) {
  const std::string cut = R"({"kind":"ResourceSliceList","items":[{"metad)";
  auto r = read_response(200, cut, kMaxListBytes);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->body.is_null());
  EXPECT_EQ(r->problem,
            "invalid JSON at byte 45: parse error at line 1, column 45: syntax error while parsing object key - "
            "invalid string: missing closing quote; last read: '\"metad'; expected string literal");
  EXPECT_EQ(
      object_answer(*r, "GET", "/x").error().message,
      "GET /x: HTTP 200 answer is not a JSON object (" + r->problem + "); the API server answers with one JSON object");
  auto deep = read_response(200, std::string(100000, '['), kMaxListBytes);
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->problem,
            "nested deeper than 64 levels at /0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/"
            "0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0");
  EXPECT_EQ(object_answer(*read_response(200, "[1]", 64), "GET", "/x").error().message,
            "GET /x: HTTP 200 answer is not a JSON object (array); the API server answers with one JSON object");
  EXPECT_EQ(object_answer(*read_response(200, "", 64), "GET", "/x").error().message,
            "GET /x: HTTP 200 answer is not a JSON object (no body); the API server answers with one JSON object");
}

TEST(DraApiResponse, FailuresNameTheCallTheStatusAndTheMessage) {
  auto status = read_response(403, R"({"kind":"Status","message":"forbidden: \"x\""})", 1024);
  EXPECT_EQ(describe_failure("GET", "/x", *status), R"(GET /x: HTTP 403: "forbidden: \x22x\x22")");
  EXPECT_EQ(describe_failure("GET", "/x", *read_response(502, "<html>bad gateway", 1024)),
            "GET /x: HTTP 502 (the body is not JSON)");
  EXPECT_EQ(describe_failure("PUT", "/x", *read_response(409, R"({"message":7})", 1024)), "PUT /x: HTTP 409");
  EXPECT_EQ(describe_failure("PUT", "/x", *read_response(500, R"(["message"])", 1024)), "PUT /x: HTTP 500");
  EXPECT_EQ(object_answer(*status, "GET", "/x").error().message, R"(GET /x: HTTP 403: "forbidden: \x22x\x22")");
}

TEST(DraSliceList, EveryFieldIsCheckedBeforeUse) {
  auto listed = listed_slices({{"items", {slice("00000-gpufrac.io-node-1-abcde")}}}, kList);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "00000-gpufrac.io-node-1-abcde");
  EXPECT_EQ((*listed)[0].uid, "u-00000-gpufrac.io-node-1-abcde");
  EXPECT_EQ((*listed)[0].resource_version, "17");
  EXPECT_EQ((*listed)[0].generation, 3);
  EXPECT_TRUE(listed_slices({{"items", nullptr}}, kList)->empty()) << "Go writes an empty list as null";
  const std::string tail = "; a ResourceSliceList holds ResourceSlices";
  EXPECT_EQ(list_error(nullptr), kList + ": the list: not an object" + tail);
  EXPECT_EQ(list_error(json::object()), kList + ": items: missing" + tail);
  EXPECT_EQ(list_error({{"items", "x"}}), kList + ": items: not a list" + tail);
  EXPECT_EQ(list_error({{"items", {7}}}), kList + ": items[0]: the item: not an object" + tail);
  json bad = slice("a");
  bad["metadata"]["name"] = 7;
  EXPECT_EQ(list_error({{"items", {slice("b"), bad}}}),
            kList + ": items[1]: metadata.name: not a non-empty string" + tail);
  bad = slice("a/../../namespaces");
  EXPECT_EQ(list_error({{"items", {bad}}}),
            kList + R"(: items[0]: metadata.name: "a/../../namespaces" is not an object name)" + tail);
  bad = slice("a");
  bad["metadata"].erase("uid");
  EXPECT_EQ(list_error({{"items", {bad}}}), kList + ": items[0]: metadata.uid: missing" + tail);
  bad = slice("a");
  bad["metadata"]["resourceVersion"] = json::array();
  EXPECT_EQ(list_error({{"items", {bad}}}),
            kList + ": items[0]: metadata.resourceVersion: not a non-empty string" + tail);
  bad = slice("a");
  bad["spec"] = "node-1";
  EXPECT_EQ(list_error({{"items", {bad}}}), kList + ": items[0]: spec: not an object" + tail);
  bad = slice("a");
  bad["spec"].erase("pool");
  EXPECT_EQ(list_error({{"items", {bad}}}), kList + ": items[0]: spec.pool: not an object" + tail);
  for (json g : {json("3"), json(-1), json(1.5), json(nullptr), json(std::uint64_t{1} << 63)})
    EXPECT_EQ(list_error({{"items", {slice("a", g)}}}),
              kList + ": items[0]: spec.pool.generation: not an integer from 0 to 2^62" + tail)
        << g.dump();
}

TEST(DraClaimGone, OnlyA404OrAnotherUidSaysGone) {
  const json same = {{"metadata", {{"uid", "u1"}}}};
  const json other = {{"metadata", {{"uid", "u2"}}}};
  EXPECT_TRUE(claim_gone(404, nullptr, "u1"));
  EXPECT_TRUE(claim_gone(200, other, "u1"));
  EXPECT_FALSE(claim_gone(200, same, "u1"));
  EXPECT_FALSE(claim_gone(500, other, "u1"));
  for (const json& body : {json(nullptr), json("x"), json{{"metadata", "m"}}, json{{"metadata", {{"uid", 7}}}},
                           json{{"metadata", {{"uid", ""}}}}, json::object()})
    EXPECT_FALSE(claim_gone(200, body, "u1")) << "an answer without a clear uid keeps the claim: " << body.dump();
}

TEST(DraPublishState, OneLinePerChangeOfState) {
  PublishState state;
  auto fail = [](const char* m) { return Result<PublishReport>(std::unexpected(Error{m})); };
  EXPECT_FALSE(state.after(PublishReport{}));
  auto created = state.after(PublishReport{2, 0, 0});
  ASSERT_TRUE(created);
  EXPECT_FALSE(created->warning);
  EXPECT_EQ(created->text, "ResourceSlices: 2 created, 0 updated, 0 deleted");
  auto failed = state.after(fail("GET /x: cut"));
  ASSERT_TRUE(failed);
  EXPECT_TRUE(failed->warning);
  EXPECT_EQ(failed->text, "publishing ResourceSlices: GET /x: cut (trying again every resync)");
  EXPECT_FALSE(state.after(fail("GET /x: cut"))) << "the same failure again: no line";
  EXPECT_EQ(state.after(fail("GET /x: HTTP 500"))->text,
            "publishing ResourceSlices: GET /x: HTTP 500 (trying again every resync)");
  EXPECT_EQ(state.after(PublishReport{2, 0, 0})->text,
            "ResourceSlices published again: 2 created, 0 updated, 0 deleted");
  EXPECT_FALSE(state.after(PublishReport{}));
  state.after(fail("GET /x: cut"));
  EXPECT_EQ(state.after(PublishReport{})->text, "ResourceSlices published again: up to date");
}

}  // namespace
}  // namespace gpufrac::dra
