// The fast path of the hook and of gpufrac-runtime: both run for every container of a node (or of
// a runtime class), so a spec that asks nothing of gpufrac must cost as little as possible. Before
// any JSON parsing, a scan of config.json's raw text for the few byte strings a request needs;
// only a spec that holds one of them is parsed.
#pragma once

#include <string>
#include <string_view>

namespace gpufrac {

// False when config.json cannot carry a gpufrac request or a GPUFRAC_ variable to warn of: none of
// "gpufrac.io" (the annotations), the alias keys ("gpu-fraction", "gpu-memory",
// "clearml-injector", and NVIDIA's "NVIDIA_GPU_MEMORY_" variables, a request of their own with the
// aliases on), "cdi.k8s.io" (CDI device annotations) or "GPUFRAC_" (the environment;
// "GPUFRAC_CONFIG=" alone is neither a request nor warned of) occurs in it, and it has no "\u"
// escape (JSON could spell a key with \u escapes; such a spec is parsed to be sure). Names are
// case-sensitive, and "/" may be escaped as "\/" in JSON, so the needles stop before any "/". The
// hook's own path in a spec's hooks ("gpufrac-hook") is none of them.
bool may_name_gpufrac(std::string_view config_json);

// The same test over a text read in pieces (a file too large to hold, read in bounded chunks):
// feed() each piece in order, then named() at the end. The answer is may_name_gpufrac of the whole
// text wherever the pieces split it: the last bytes of each piece are kept for the next, so a name
// split across two pieces is found, and a "GPUFRAC_" at the end of a piece waits for the bytes that
// tell it from "GPUFRAC_CONFIG=". Memory: one piece plus 15 bytes.
class SpecScanner {
 public:
  // True once the text fed so far names gpufrac (it stays so).
  bool feed(std::string_view piece);
  bool named() const;

 private:
  std::string window_;  // the carried tail of the previous pieces, then the current piece
  bool named_ = false;
};

}  // namespace gpufrac
