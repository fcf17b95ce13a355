/* dlsym, exported at the versions glibc defines it (x86-64: GLIBC_2.2.5 for programs built
 * before glibc 2.34, GLIBC_2.34 after; aarch64: GLIBC_2.17 and GLIBC_2.34), so that
 * dlopen("libcuda.so.1") + dlsym(handle, "cuMemAlloc_v2") and the same for NVML yield the
 * shim's wrappers. glibc's dlsym resolves RTLD_NEXT and RTLD_DEFAULT relative to its caller's
 * return address, so every lookup the shim does not answer itself is a tail jump to glibc's
 * dlsym with the caller's own return address intact (assembly below): a library that calls
 * dlsym(RTLD_NEXT, "f") from inside its own f still gets the next f, not itself again.
 * RTLD_NEXT and RTLD_DEFAULT need no answer from the shim: the shim exports the wrapped names,
 * so a search of the global scope finds them first anyway. No allocation, no lock, and no call
 * back into dlsym: safe to enter recursively. */
#include <dlfcn.h>

#include "gf_exports.h"

/* Returns 1 with *out set when the shim answers, 0 to pass the call on to glibc's dlsym. */
__attribute__((used, visibility("hidden"))) int gf_dlsym_route(void* handle, const char* name, void** out) {
  if (GF_UNLIKELY(gf_real_dlsym_fn == NULL)) gf_resolve_real_dlsym();
  if (GF_UNLIKELY(gf_real_dlsym_fn == NULL)) {
    *out = NULL; /* no glibc dlsym was found: nothing to forward to */
    return 1;
  }
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || name == NULL) return 0;
  void* wrapper = gf_wrapper_by_name(name);
  if (wrapper == NULL) return 0;
  void* real = gf_real_dlsym_fn(handle, name); /* a concrete handle: independent of the caller */
  if (real == NULL) return 0;                  /* let glibc set dlerror() as usual */
  if (gf_mode() == GF_MODE_INERT) return 0;
  *out = wrapper;
  return 1;
}

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl gf_dlsym_v2_2_5\n"
    ".globl gf_dlsym_v2_34\n"
    ".type gf_dlsym_v2_2_5, @function\n"
    ".type gf_dlsym_v2_34, @function\n"
    ".p2align 4\n"
    "gf_dlsym_v2_2_5:\n"
    "gf_dlsym_v2_34:\n"
    ".cfi_startproc\n"
    "  endbr64\n"
    "  pushq %rdi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "  pushq %rsi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "  subq $24, %rsp\n" /* out slot at 0(%rsp); %rsp is 16-byte aligned for the call */
    ".cfi_adjust_cfa_offset 24\n"
    "  movq %rsp, %rdx\n"
    "  call gf_dlsym_route\n"
    "  testl %eax, %eax\n"
    "  jz 1f\n"
    "  movq (%rsp), %rax\n"
    "  addq $40, %rsp\n"
    ".cfi_adjust_cfa_offset -40\n"
    "  ret\n"
    ".cfi_adjust_cfa_offset 40\n"
    "1:\n"
    "  addq $24, %rsp\n"
    ".cfi_adjust_cfa_offset -24\n"
    "  popq %rsi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "  popq %rdi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "  jmp *gf_real_dlsym_fn(%rip)\n"
    ".cfi_endproc\n"
    ".size gf_dlsym_v2_2_5, .-gf_dlsym_v2_2_5\n"
    ".size gf_dlsym_v2_34, .-gf_dlsym_v2_34\n"
    ".symver gf_dlsym_v2_2_5, dlsym@GLIBC_2.2.5\n"
    ".symver gf_dlsym_v2_34, dlsym@@GLIBC_2.34\n");
#elif defined(__aarch64__)
__asm__(
    ".text\n"
    ".globl gf_dlsym_v2_17\n"
    ".globl gf_dlsym_v2_34\n"
    ".type gf_dlsym_v2_17, %function\n"
    ".type gf_dlsym_v2_34, %function\n"
    ".p2align 4\n"
    "gf_dlsym_v2_17:\n"
    "gf_dlsym_v2_34:\n"
    ".cfi_startproc\n"
    "  hint #34\n" /* bti c */
    "  stp x29, x30, [sp, #-48]!\n"
    ".cfi_def_cfa_offset 48\n"
    ".cfi_offset 29, -48\n"
    ".cfi_offset 30, -40\n"
    "  mov x29, sp\n"
    "  stp x0, x1, [sp, #16]\n"
    "  add x2, sp, #32\n"
    "  bl gf_dlsym_route\n"
    "  cbz w0, 1f\n"
    "  ldr x0, [sp, #32]\n"
    "  ldp x29, x30, [sp], #48\n"
    "  ret\n"
    "1:\n"
    "  ldp x0, x1, [sp, #16]\n"
    "  ldp x29, x30, [sp], #48\n"
    "  adrp x16, gf_real_dlsym_fn\n"
    "  ldr x16, [x16, :lo12:gf_real_dlsym_fn]\n"
    "  br x16\n"
    ".cfi_endproc\n"
    ".size gf_dlsym_v2_17, .-gf_dlsym_v2_17\n"
    ".size gf_dlsym_v2_34, .-gf_dlsym_v2_34\n"
    ".symver gf_dlsym_v2_17, dlsym@GLIBC_2.17\n"
    ".symver gf_dlsym_v2_34, dlsym@@GLIBC_2.34\n");
#else
#error "dlsym.c: the caller-preserving dlsym needs an assembly entry for this architecture"
#endif
