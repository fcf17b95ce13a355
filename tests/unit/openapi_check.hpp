// A structural check of a JSON document against the OpenAPI v3 schema excerpt of resource.k8s.io/v1
// (../shared/reference/kubernetes-openapi/, copied to tests/fixtures/kubernetes-openapi/): types,
// oneOf, required fields, every field known (the API server drops unknown ones), $ref and allOf,
// maps (additionalProperties) and lists. References the excerpt leaves dangling (ObjectMeta, ...)
// accept any object. Test code: the DRA tests check every document gpufrac-dra would send.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpufrac::testing {

// "<json path>: <what is wrong>" for every violation; empty when the document conforms.
std::vector<std::string> openapi_violations(const nlohmann::json& doc, const std::string& schema_name,
                                            const nlohmann::json& schemas);
// components.schemas of the excerpt shipped with the tests.
const nlohmann::json& resource_v1_schemas();

}  // namespace gpufrac::testing
