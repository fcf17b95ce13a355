#!/bin/bash
# The CDI refresh units as installed: systemd-analyze verify accepts the service (pointed at this
# build's gpufrac) and the path unit; the service runs `gpufrac info --refresh` then
# `gpufrac cdi generate`; the udev rule starts it when the NVIDIA modules load. The metrics service
# passes the same verification.
source "$(dirname "$0")/lib.sh"
need_cmd systemd-analyze
e2e_tmp
SRC=$GPUFRAC_SOURCE_DIR/etc/systemd
SERVICE=$GPUFRAC_BUILD_DIR/etc/systemd/gpufrac-cdi-refresh.service
[ -f "$SERVICE" ] || skip "no configured service in $GPUFRAC_BUILD_DIR/etc/systemd"
mkdir -p "$E2E_TMP/units"
configured_bin=$(sed -n 's|^ExecStart=\(.*\)/gpufrac cdi generate$|\1|p' "$SERVICE")
[ -n "$configured_bin" ] || fail "the service does not run <bindir>/gpufrac cdi generate"
sed "s|$configured_bin/gpufrac|$GPUFRAC|" "$SERVICE" >"$E2E_TMP/units/gpufrac-cdi-refresh.service"
cp "$SRC/gpufrac-cdi-refresh.path" "$E2E_TMP/units/"

run systemd-analyze verify --man=no "$E2E_TMP/units/gpufrac-cdi-refresh.service" "$E2E_TMP/units/gpufrac-cdi-refresh.path"
assert_eq "$RC" 0 "systemd-analyze verify: $OUT"
assert_eq "$OUT" "" "no warnings"
assert_eq "$(grep '^ExecStart=' "$E2E_TMP/units/gpufrac-cdi-refresh.service")" \
  "$(printf 'ExecStart=%s info --refresh --json\nExecStart=%s cdi generate' "$GPUFRAC" "$GPUFRAC")" \
  "refresh the inventory, then generate the spec"
assert_contains "$(cat "$SERVICE")" "Type=oneshot" "oneshot"
assert_contains "$(cat "$SRC/gpufrac-cdi-refresh.path")" "Unit=gpufrac-cdi-refresh.service" "path unit starts the service"
assert_eq "$(grep -v '^#' "$SRC/71-gpufrac-cdi.rules")" \
  'ACTION=="add", SUBSYSTEM=="module", KERNEL=="nvidia|nvidia_uvm", RUN+="/bin/systemctl --no-block start gpufrac-cdi-refresh.service"' \
  "udev rule on NVIDIA module load"

# The metrics service: verified the same way; it serves gpufrac metrics on the default address.
METRICS=$GPUFRAC_BUILD_DIR/etc/systemd/gpufrac-metrics.service
sed "s|$configured_bin/gpufrac|$GPUFRAC|" "$METRICS" >"$E2E_TMP/units/gpufrac-metrics.service"
run systemd-analyze verify --man=no "$E2E_TMP/units/gpufrac-metrics.service"
assert_eq "$RC:$OUT" "0:" "systemd-analyze verify gpufrac-metrics.service"
assert_eq "$(grep '^ExecStart=' "$E2E_TMP/units/gpufrac-metrics.service")" "ExecStart=$GPUFRAC metrics --listen 127.0.0.1:9400" \
  "the metrics service"
finish
