// The fast path of the hook and of gpufrac-runtime: both run for every container of a node (or of
// a runtime class), so a spec that asks nothing of gpufrac must cost as little as possible. Before
// any JSON parsing, a scan of config.json's raw text for the few byte strings a request needs;
// only a spec that holds one of them is parsed.
#pragma once

#include <string_view>

namespace gpufrac {

// False when config.json cannot carry a gpufrac request or a GPUFRAC_ variable to warn of: none of
// "gpufrac.io" (the annotations), the alias keys ("gpu-fraction", "gpu-memory",
// "clearml-injector"), "cdi.k8s.io" (CDI device annotations) or "GPUFRAC_" (the environment;
// "GPUFRAC_CONFIG=" alone is neither a request nor warned of) occurs in it, and it has no "\u"
// escape (JSON could spell a key with \u escapes; such a spec is parsed to be sure). Names are
// case-sensitive, and "/" may be escaped as "\/" in JSON, so the needles stop before any "/". The
// hook's own path in a spec's hooks ("gpufrac-hook") is none of them.
bool may_name_gpufrac(std::string_view config_json);

}  // namespace gpufrac
