#!/bin/bash
# The shim's ELF interface: exactly the intercepted symbols (dlsym at glibc's own versions), no
# dependency beyond libc and libdl, no symbol version newer than GLIBC_2.17 (loads in images with
# an older glibc than the build host's: HAMi-core's glibc 2.30-2.36 breakage), no GLIBC_PRIVATE.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/shim_lib.sh"
e2e_tmp
[ "$(uname -m)" = x86_64 ] || skip "symbol versions are checked for x86-64"

expected="GLIBC_2.2.5
GLIBC_2.34
GPUFRAC_LIMITS_1
cuArray3DCreate_v2@@GPUFRAC_LIMITS_1
cuArrayCreate_v2@@GPUFRAC_LIMITS_1
cuArrayDestroy@@GPUFRAC_LIMITS_1
cuCtxSynchronize@@GPUFRAC_LIMITS_1
cuEventSynchronize@@GPUFRAC_LIMITS_1
cuGraphLaunch@@GPUFRAC_LIMITS_1
cuGraphLaunch_ptsz@@GPUFRAC_LIMITS_1
cuLaunchCooperativeKernel@@GPUFRAC_LIMITS_1
cuLaunchCooperativeKernelMultiDevice@@GPUFRAC_LIMITS_1
cuLaunchCooperativeKernel_ptsz@@GPUFRAC_LIMITS_1
cuLaunchKernel@@GPUFRAC_LIMITS_1
cuLaunchKernelEx@@GPUFRAC_LIMITS_1
cuLaunchKernelEx_ptsz@@GPUFRAC_LIMITS_1
cuLaunchKernel_ptsz@@GPUFRAC_LIMITS_1
cuStreamBeginCapture@@GPUFRAC_LIMITS_1
cuStreamBeginCapture_ptsz@@GPUFRAC_LIMITS_1
cuStreamBeginCapture_v2@@GPUFRAC_LIMITS_1
cuStreamBeginCapture_v2_ptsz@@GPUFRAC_LIMITS_1
cuStreamEndCapture@@GPUFRAC_LIMITS_1
cuStreamEndCapture_ptsz@@GPUFRAC_LIMITS_1
cuStreamSynchronize@@GPUFRAC_LIMITS_1
cuStreamSynchronize_ptsz@@GPUFRAC_LIMITS_1
cuDeviceGetDefaultMemPool@@GPUFRAC_LIMITS_1
cuDeviceGetMemPool@@GPUFRAC_LIMITS_1
cuDeviceTotalMem_v2@@GPUFRAC_LIMITS_1
cuGetProcAddress@@GPUFRAC_LIMITS_1
cuGetProcAddress_v2@@GPUFRAC_LIMITS_1
cuMemAllocAsync@@GPUFRAC_LIMITS_1
cuMemAllocAsync_ptsz@@GPUFRAC_LIMITS_1
cuMemAllocFromPoolAsync@@GPUFRAC_LIMITS_1
cuMemAllocFromPoolAsync_ptsz@@GPUFRAC_LIMITS_1
cuMemAllocManaged@@GPUFRAC_LIMITS_1
cuMemAllocPitch_v2@@GPUFRAC_LIMITS_1
cuMemAlloc_v2@@GPUFRAC_LIMITS_1
cuMemCreate@@GPUFRAC_LIMITS_1
cuMemFreeAsync@@GPUFRAC_LIMITS_1
cuMemFreeAsync_ptsz@@GPUFRAC_LIMITS_1
cuMemFree_v2@@GPUFRAC_LIMITS_1
cuMemGetInfo_v2@@GPUFRAC_LIMITS_1
cuMemPoolCreate@@GPUFRAC_LIMITS_1
cuMemPoolDestroy@@GPUFRAC_LIMITS_1
cuMemRelease@@GPUFRAC_LIMITS_1
cuMipmappedArrayCreate@@GPUFRAC_LIMITS_1
cuMipmappedArrayDestroy@@GPUFRAC_LIMITS_1
dlsym@@GLIBC_2.34
dlsym@GLIBC_2.2.5
nvmlDeviceGetMemoryInfo@@GPUFRAC_LIMITS_1
nvmlDeviceGetMemoryInfo_v2@@GPUFRAC_LIMITS_1"
assert_eq "$(nm -D --defined-only "$SHIM" | awk '{print $3}' | LC_ALL=C sort)" "$(LC_ALL=C sort <<<"$expected")" \
  "exported symbols"

needed=$(readelf -d "$SHIM" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
assert_eq "$needed" "libc.so.6 libdl.so.2 " "DT_NEEDED"
assert_not_contains "$(readelf -d "$SHIM")" "PATH" "no RPATH/RUNPATH"

refs=$(objdump -p "$SHIM" | sed -n '/Version References/,$p')
assert_not_contains "$refs" "GLIBC_PRIVATE" "no GLIBC_PRIVATE"
newest=$(grep -o 'GLIBC_2\.[0-9.]*' <<<"$refs" | sort -V | tail -1)
assert_eq "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -1)" "GLIBC_2.17" "newest glibc version required ($newest)"
assert_contains "$(sed -n '/libdl.so.2/,/required from/p' <<<"$refs")" "GLIBC_2.2.5" "dlopen/dlvsym from libdl.so.2"
assert_eq "$(objdump -T "$SHIM" | awk '/\*UND\*/ && /dlopen|dlvsym/ {print $(NF-1)}' | sort -u)" "(GLIBC_2.2.5)" \
  "dlopen and dlvsym at GLIBC_2.2.5"

# Preloaded into ordinary programs without a limit file, the shim is silent and changes nothing.
unset GPUFRAC_LIMITS_FILE
run env LD_PRELOAD="$SHIM" /bin/sh -c 'echo hello; ls / >/dev/null'
assert_eq "$RC" 0 "sh under the shim"
assert_eq "$OUT" "hello" "no output from the shim"
finish
