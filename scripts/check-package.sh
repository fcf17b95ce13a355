#!/bin/bash
# Checks the gpufrac Debian package (packaging/build-deb.sh builds it). Run as root.
#   scripts/check-package.sh contents DEB   lintian (no E:), control fields, the exact file list, conffiles
#   scripts/check-package.sh install DEB    apt-get install ./DEB, then the installed files work
#   scripts/check-package.sh remove         apt-get remove: only conffiles are left; purge: nothing is
# `install` records `dpkg -L` for `remove` in $PKG_STATE_DIR (default /var/tmp/gpufrac-package-check).
# Every failed check prints one line; the command exits 1 if any failed.
set -eu
cd "$(dirname "$0")/.."
SRC=$(pwd)
PKG=gpufrac
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
SHIM_DIR=/usr/lib/$MULTIARCH/gpufrac
STATE=${PKG_STATE_DIR:-/var/tmp/gpufrac-package-check}
FAILURES=0

fail() { echo "check-package: FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected [$2], got [$1]"; }
finish() {
  if [ "$FAILURES" -ne 0 ]; then echo "check-package: $1: $FAILURES check(s) failed" >&2; exit 1; fi
  echo "check-package: $1: all checks passed"
}

cmake_version() { sed -n 's/^project(gpufrac VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt"; }

# Every path the package must ship (files and symbolic links; directories are implied). Docs may
# be compressed by dh_compress depending on their size: they are listed without .gz.
expected_files() {
  printf '%s\n' \
    /etc/gpufrac/config.yaml \
    /lib/systemd/system/gpufrac-cdi-refresh.path \
    /lib/systemd/system/gpufrac-cdi-refresh.service \
    /lib/systemd/system/gpufrac-metrics.service \
    /lib/udev/rules.d/71-gpufrac-cdi.rules \
    /usr/bin/gpufrac \
    /usr/bin/gpufrac-dra \
    /usr/bin/gpufrac-hook \
    /usr/bin/gpufrac-runtime \
    /usr/lib/tmpfiles.d/gpufrac.conf \
    "$SHIM_DIR/libgpufrac-limits.so" \
    /usr/share/containers/oci/hooks.d/50-gpufrac-poststop.json \
    /usr/share/containers/oci/hooks.d/50-gpufrac-prestart.json \
    /usr/share/doc/gpufrac/README.md \
    /usr/share/doc/gpufrac/architecture.md \
    /usr/share/doc/gpufrac/changelog.Debian \
    /usr/share/doc/gpufrac/copyright \
    /usr/share/doc/gpufrac/machines.md \
    /usr/share/gpufrac/grafana/gpufrac.json \
    /usr/share/lintian/overrides/gpufrac \
    /usr/share/man/man1/gpufrac.1.gz \
    /usr/share/man/man5/gpufrac-config.5.gz \
    /usr/share/man/man8/gpufrac-dra.8.gz \
    /usr/share/man/man8/gpufrac-hook.8.gz \
    /usr/share/man/man8/gpufrac-runtime.8.gz
  (cd "$SRC" && find deploy -type f) | sed "s|^|/usr/share/gpufrac/|"
  for m in "$SRC"/nvml/machines/*.yaml; do echo "/usr/share/gpufrac/machines/$(basename "$m")"; done
}

check_contents() {
  local deb=$1 out
  [ -f "$deb" ] || { echo "check-package: no package $deb" >&2; exit 2; }
  echo "check-package: lintian --display-info --pedantic $deb"
  # lintian warns when run as root: run it as nobody on a copy nobody can read.
  local ldir
  ldir=$(mktemp -d)
  cp "$deb" "$ldir/" && chmod 755 "$ldir" && chmod 644 "$ldir/$(basename "$deb")"
  if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    out=$(cd "$ldir" && runuser -u nobody -- env HOME="$ldir" lintian --display-info --pedantic "$(basename "$deb")" 2>&1) || true
  else
    out=$(lintian --display-info --pedantic "$ldir/$(basename "$deb")" 2>&1) || true
  fi
  rm -rf "$ldir"
  [ -z "$out" ] || printf '%s\n' "$out"
  if grep -q '^E: ' <<<"$out"; then fail "lintian reports errors (E: lines above)"; fi

  echo "check-package: control fields"
  expect_eq "$(dpkg-deb -f "$deb" Package)" "$PKG" "Package"
  expect_eq "$(dpkg-deb -f "$deb" Version)" "$(cmake_version)-1" "Version (CMake version + Debian revision 1)"
  expect_eq "$(dpkg-deb -f "$deb" Recommends)" "runc | crun, podman | containerd" "Recommends"
  local depends
  depends=$(dpkg-deb -f "$deb" Depends)
  for lib in libc6 libyaml-cpp; do
    case $depends in *"$lib"*) ;; *) fail "Depends lacks $lib (from \${shlibs:Depends}): $depends" ;; esac
  done
  case $depends in *nvidia*) fail "Depends names an NVIDIA package: $depends" ;; esac

  echo "check-package: file list"
  local listed expected
  listed=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|' | grep -v '/$' |
    sed 's|^\(/usr/share/doc/gpufrac/.*\)\.gz$|\1|' | sort)
  expected=$(expected_files | sort)
  if [ "$listed" != "$expected" ]; then
    fail "the package's files differ from the expected list (< missing, > unexpected):"
    diff <(echo "$expected") <(echo "$listed") | grep '^[<>]' >&2 || true
  fi
  expect_eq "$(dpkg-deb -I "$deb" conffiles 2>/dev/null)" "/etc/gpufrac/config.yaml" "conffiles"

  echo "check-package: binaries are stripped; the hook and the wrapper are static"
  local tmp
  tmp=$(mktemp -d)
  dpkg-deb -x "$deb" "$tmp"
  for f in usr/bin/gpufrac usr/bin/gpufrac-dra usr/bin/gpufrac-hook usr/bin/gpufrac-runtime "${SHIM_DIR#/}/libgpufrac-limits.so"; do
    if readelf -S "$tmp/$f" | grep -q '\.debug_info'; then fail "$f has debug info (not stripped)"; fi
  done
  for f in usr/bin/gpufrac-hook usr/bin/gpufrac-runtime; do
    if readelf -l "$tmp/$f" | grep -q INTERP; then fail "$f is not statically linked"; fi
  done
  rm -rf "$tmp"
  finish contents
}

check_install() {
  local deb=$1 f
  # Never replace an installation this check did not make (it purges what it installed).
  if [ -n "$(dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null)" ]; then
    echo "check-package: $PKG is already on this machine ($(dpkg-query -W -f='${db:Status-Status}' "$PKG")):" \
      "purge it first, or leave the package stages out (SKIP=package scripts/test.sh)" >&2
    exit 2
  fi
  echo "check-package: apt-get install ./$(basename "$deb")"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")" >/dev/null
  mkdir -p "$STATE"
  dpkg -L "$PKG" | grep -v '^/\.$' | sort >"$STATE/files"
  dpkg-query -W -f='${Conffiles}\n' "$PKG" | awk 'NF {print $1}' | sort >"$STATE/conffiles"

  echo "check-package: installed files"
  while read -r f; do [ -e "$f" ] || [ -L "$f" ] || fail "$f is listed by dpkg -L but missing"; done <"$STATE/files"
  expect_eq "$(cat "$STATE/conffiles")" "/etc/gpufrac/config.yaml" "conffiles of the installed package"
  expect_eq "$(gpufrac --version)" "gpufrac $(cmake_version)" "gpufrac --version"
  expect_eq "$(command -v gpufrac)" /usr/bin/gpufrac "gpufrac on PATH"
  cmp -s /etc/gpufrac/config.yaml "$SRC/etc/config.yaml" || fail "/etc/gpufrac/config.yaml differs from etc/config.yaml"
  local shim
  shim=$(sed -n 's/^  path: \(.*libgpufrac-limits.so\)$/\1/p' /etc/gpufrac/config.yaml)
  expect_eq "$shim" "$SHIM_DIR/libgpufrac-limits.so" "the config's shim.path is the installed shim"
  [ -d /run/gpufrac ] || fail "/run/gpufrac was not created"
  expect_eq "$(stat -c '%a %U:%G' /run/gpufrac 2>/dev/null)" "755 root:root" "/run/gpufrac mode and owner"
  expect_eq "$(grep -v '^#' /usr/lib/tmpfiles.d/gpufrac.conf)" "d /run/gpufrac 0755 root root -" "tmpfiles.d entry"

  echo "check-package: man pages"
  # `man -w` finds each page where man looks; it is formatted with `man -l`, which (unlike `man
  # PAGE` as root) leaves no formatted copy in /var/cache/man behind.
  local path
  for page in "1 gpufrac" "5 gpufrac-config" "8 gpufrac-dra" "8 gpufrac-hook" "8 gpufrac-runtime"; do
    # shellcheck disable=SC2086
    path=$(man -w $page 2>&1) || { fail "man $page: $path"; continue; }
    out=$(MANWIDTH=80 man -l "$path" 2>&1 >/dev/null) || fail "man $page: $out"
    warn=$(MANWIDTH=80 man --warnings -l "$path" 2>&1 >/dev/null) || true
    [ -z "$warn" ] || fail "man $page: groff warnings: $warn"
  done
  out=$(MANWIDTH=80 man -l "$(man -w 1 gpufrac)" 2>&1 | tr -s " ") || true
  # reclaim start/run/keep: the burst reclaimer, a subcommand of /usr/bin/gpufrac started on demand by the
  # front-ends (no unit of its own; docs/architecture.md "Burstable memory").
  for cmd in "info" "status" "gc" "cdi generate" "cdi list" "cdi validate" "runtime configure" "simulate init-root" \
    "reclaim start" "reclaim run" "reclaim keep"; do
    grep -q "^ *$cmd" <<<"$out" || fail "man gpufrac does not describe $cmd"
  done

  echo "check-package: hooks.d, units and the installed programs"
  for stage in prestart poststop; do
    f=/usr/share/containers/oci/hooks.d/50-gpufrac-$stage.json
    expect_eq "$(jq -S . "$f")" "$(jq -S '.hook.path = "/usr/bin/gpufrac-hook"' "$SRC/etc/oci/hooks.d/50-gpufrac-$stage.json")" "$f"
  done
  expect_eq "$(grep '^ExecStart=' /lib/systemd/system/gpufrac-cdi-refresh.service)" \
    "$(printf 'ExecStart=/usr/bin/gpufrac info --refresh --json\nExecStart=/usr/bin/gpufrac cdi generate')" \
    "the refresh service runs the installed gpufrac"
  expect_eq "$(grep '^ExecStart=' /lib/systemd/system/gpufrac-metrics.service)" \
    "ExecStart=/usr/bin/gpufrac metrics --listen 127.0.0.1:9400" "the metrics service runs the installed gpufrac"
  if command -v systemd-analyze >/dev/null; then
    out=$(systemd-analyze verify --man=no /lib/systemd/system/gpufrac-cdi-refresh.service \
      /lib/systemd/system/gpufrac-cdi-refresh.path /lib/systemd/system/gpufrac-metrics.service 2>&1) ||
      fail "systemd-analyze verify: $out"
  fi
  out=$(gpufrac info --machine /usr/share/gpufrac/machines/a100-40gb-x2.yaml 2>&1) || fail "gpufrac info (simulated): $out"
  grep -q 'A100' <<<"$out" || fail "gpufrac info on a simulated machine lists no A100: $out"
  out=$(gpufrac cdi generate --machine /usr/share/gpufrac/machines/a100-40gb-x1.yaml --output - 2>&1) ||
    fail "gpufrac cdi generate: $out"
  grep -q '"/usr/bin/gpufrac-hook"' <<<"$out" || fail "the CDI spec does not name /usr/bin/gpufrac-hook"
  # The spec's createRuntime hook mounts the shim (/run/gpufrac is never in a spec); cdi generate
  # warns when the hook or the shim it names (hook.path, shim.path) is missing. A simulated machine
  # over host-root / lacks its device nodes, and that warning must say how to make them.
  ! grep -q 'warning:.*(\(hook\|shim\)\.path)' <<<"$out" ||
    fail "gpufrac cdi generate names a missing hook or shim: $(grep 'warning:' <<<"$out")"
  if grep -q 'warning:.*device nodes' <<<"$out"; then
    grep -q 'gpufrac simulate init-root --machine' <<<"$out" ||
      fail "the missing device nodes' warning does not say what makes them: $(grep 'warning:' <<<"$out")"
  fi
  grep -q "^shim:" /etc/gpufrac/config.yaml && ! grep -q "path: $SHIM_DIR/libgpufrac-limits.so" /etc/gpufrac/config.yaml &&
    fail "/etc/gpufrac/config.yaml names another shim than $SHIM_DIR/libgpufrac-limits.so"
  out=$(gpufrac-hook poststop </dev/null 2>&1) || fail "gpufrac-hook poststop must exit 0: $out"
  finish install
}

# A directory of the package still present after removal is fine when another package owns it, it
# is a symbolic link (merged /usr: /lib), or it holds a conffile that stays.
dir_explained() {
  local d=$1 c
  [ -L "$d" ] && return 0
  dpkg-query -S "$d" 2>/dev/null | grep -qv "^$PKG: " && return 0
  while read -r c; do case $c in "$d"/*) [ -e "$c" ] && return 0 ;; esac; done <"$STATE/conffiles"
  return 1
}

check_remove() {
  local f left
  [ -s "$STATE/files" ] || { echo "check-package: no $STATE/files: run 'install' first" >&2; exit 2; }
  echo "check-package: apt-get remove $PKG"
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq "$PKG" >/dev/null
  expect_eq "$(dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null)" config-files "package state after remove"
  while read -r f; do
    if [ -d "$f" ]; then
      dir_explained "$f" || fail "directory $f is left after remove"
    elif [ -e "$f" ] || [ -L "$f" ]; then
      grep -qxF "$f" "$STATE/conffiles" || fail "$f is left after remove (not a conffile)"
    fi
  done <"$STATE/files"
  while read -r f; do [ -e "$f" ] || fail "conffile $f was removed by remove (only purge removes it)"; done <"$STATE/conffiles"

  echo "check-package: apt-get purge $PKG"
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "$PKG" >/dev/null
  if dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null | grep -q .; then
    fail "dpkg still knows $PKG after purge: $(dpkg-query -W -f='${db:Status-Status}' "$PKG")"
  fi
  while read -r f; do
    if [ -d "$f" ]; then
      [ -L "$f" ] || dpkg-query -S "$f" >/dev/null 2>&1 || fail "directory $f is left after purge"
    elif [ -e "$f" ] || [ -L "$f" ]; then
      fail "$f is left after purge"
    fi
  done <"$STATE/files"
  for f in /etc/gpufrac /run/gpufrac /var/log/gpufrac; do [ ! -e "$f" ] || fail "$f is left after purge"; done
  left=$(find /etc/systemd /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked \
    /usr/share/containers /etc/containers /var/cache/man -name '*gpufrac*' 2>/dev/null || true)
  [ -z "$left" ] || fail "left after purge: $left"
  rm -rf "$STATE"
  finish remove
}

case ${1:-} in
  contents) check_contents "${2:?usage: check-package.sh contents DEB}" ;;
  install) check_install "${2:?usage: check-package.sh install DEB}" ;;
  remove) check_remove ;;
  *) echo "usage: scripts/check-package.sh contents DEB | install DEB | remove" >&2; exit 2 ;;
esac
