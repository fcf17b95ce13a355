#!/bin/bash
# engine-config/ (the engines' configuration: `gpufrac runtime configure`, `gpufrac node setup`) sits
# above core/ and below the programs (STYLE.md "Layers"): its files include only core/ and
# engine-config/, and no program folder but cli/ includes it (gpufrac-runtime, the wrapper, never
# renders an engine's configuration).
# Usage (ctest passes it): engine_config_layers_test.sh <source dir>
set -euo pipefail
SRC=${1:?usage: engine_config_layers_test.sh <source dir>}
FAILURES=0
fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}
[ -d "$SRC/engine-config" ] || fail "$SRC/engine-config: missing"
while IFS= read -r line; do
  fail "engine-config includes a higher layer: $line"
done < <(grep -Hn '^#include "' "$SRC"/engine-config/*.[ch]pp | grep -v -E '#include "(core|engine-config)/')
for dir in hook runtime-wrapper k8s limits nvml cdi metrics bundle state exec core; do
  while IFS= read -r line; do
    fail "$dir/ includes engine-config/: $line"
  done < <(grep -rHn '^#include "engine-config/' "$SRC/$dir" || true)
done
[ -d "$SRC/runtime-wrapper/configure" ] && fail "runtime-wrapper/configure/ is back; it lives in engine-config/"
[ "$FAILURES" -eq 0 ] || exit 1
echo "ok: engine-config/ includes only core/ and itself; only cli/ includes it"
