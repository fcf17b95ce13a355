#!/bin/bash
# gpufrac-hook is immune to LD_PRELOAD and LD_LIBRARY_PATH in the environment it is started with:
# a library whose constructor leaves a marker runs in an ordinary program but never in the hook.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
need_cmd cc
e2e_tmp
cat >"$E2E_TMP/evil.c" <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void evil(void) {
  const char* m = getenv("EVIL_MARKER");
  if (m) close(open(m, O_CREAT | O_WRONLY, 0644));
}
C
cc -shared -fPIC -o "$E2E_TMP/libevil.so" "$E2E_TMP/evil.c"
mkdir -p "$E2E_TMP/lib" && cp "$E2E_TMP/libevil.so" "$E2E_TMP/lib/libc.so.6"

EVIL_MARKER=$E2E_TMP/control LD_PRELOAD=$E2E_TMP/libevil.so /bin/true
test -e "$E2E_TMP/control" || fail "control: the preload library must run in an ordinary program"

state='{"id":"static-check","bundle":"/nonexistent","status":"stopped"}'
EVIL_MARKER=$E2E_TMP/hook LD_PRELOAD=$E2E_TMP/libevil.so LD_LIBRARY_PATH=$E2E_TMP/lib "$HOOK" poststop <<<"$state" || true
EVIL_MARKER=$E2E_TMP/hook LD_PRELOAD=$E2E_TMP/libevil.so "$HOOK" createRuntime <<<"$state" >/dev/null 2>&1 || true
test -e "$E2E_TMP/hook" && fail "LD_PRELOAD ran code inside gpufrac-hook"
run readelf -l "$HOOK"
assert_not_contains "$OUT" "INTERP" "gpufrac-hook has no program interpreter (fully static)"
run readelf -d "$HOOK"
assert_not_contains "$OUT" "NEEDED" "gpufrac-hook needs no shared library"
finish
