// The wrapper's fast path. gpufrac-runtime runs for every container of its runtime class, so a
// create without a GPU request must cost as little as possible: before any JSON parsing, a scan of
// the raw config.json for the few byte strings a request needs. Only a spec that contains one of
// them is parsed (and then decided by its annotations alone).
#pragma once

#include <string_view>

namespace gpufrac::wrapper {

// False when config.json cannot carry a gpufrac request: none of "gpufrac.io", the alias keys
// ("gpu-fraction", "gpu-memory", "clearml-injector"), "cdi.k8s.io" or "GPUFRAC_" (a request by
// environment, or a variable to warn about) occurs in it, and it has no
// \u escape (JSON could spell a key with \u escapes; such a spec is parsed to be sure). "/" may
// be escaped as "\/" in JSON, so the needles stop before any "/".
bool may_request_gpu(std::string_view config_json);

}  // namespace gpufrac::wrapper
