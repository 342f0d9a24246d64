/* Kernel argument kinds read from the SPIR-V itself: an OpenCL engine that takes SPIR-V directly may not
 * report argument address qualifiers, and a Level Zero driver must know which arguments are pointers (set
 * with clSetKernelArgSVMPointer), local memory (size only) or values. */
#include "zesim.h"

#include <stdio.h>
#include <string.h>

enum { OP_ENTRY_POINT = 15, OP_TYPE_POINTER = 32, OP_FUNCTION = 54, OP_FUNCTION_PARAMETER = 55, OP_FUNCTION_END = 56 };
enum { SC_UNIFORM_CONSTANT = 0, SC_WORKGROUP = 4, SC_CROSS_WORKGROUP = 5, SC_GENERIC = 8 };
enum { EXEC_MODEL_KERNEL = 6 };

/* The storage class of pointer type id, or -1 when id is not a pointer type. */
static int storage_class(const uint32_t *w, size_t n, uint32_t id) {
  for (size_t i = 5; i < n;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (len == 0 || i + len > n) return -1;
    if (op == OP_TYPE_POINTER && len >= 4 && w[i + 1] == id) return (int)w[i + 2];
    i += len;
  }
  return -1;
}

int zs_spirv_arg_quals(const void *spirv, size_t size, const char *kernel, cl_kernel_arg_address_qualifier *quals,
                       uint32_t n_args) {
  const uint32_t *w = spirv;
  size_t n = size / 4;
  if (n < 5 || w[0] != 0x07230203u) return -1; /* byte-swapped modules are not handled: fall back */
  uint32_t func = 0;
  int found = 0;
  for (size_t i = 5; i < n && !found;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (len == 0 || i + len > n) return -1;
    if (op == OP_ENTRY_POINT && len >= 4 && w[i + 1] == EXEC_MODEL_KERNEL) {
      const char *name = (const char *)&w[i + 3];
      size_t max = (len - 3) * 4;
      if (strnlen(name, max) < max && !strcmp(name, kernel)) {
        func = w[i + 2];
        found = 1;
      }
    }
    i += len;
  }
  if (!found) return -1;
  for (size_t i = 5; i < n;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (len == 0 || i + len > n) return -1;
    if (op == OP_FUNCTION && len >= 5 && w[i + 2] == func) {
      uint32_t a = 0;
      for (size_t j = i + len; j < n && a <= n_args;) {
        uint32_t l2 = w[j] >> 16, op2 = w[j] & 0xffff;
        if (l2 == 0 || j + l2 > n) return -1;
        if (op2 != OP_FUNCTION_PARAMETER) break;
        if (a == n_args) return -1; /* more parameters than the engine reports */
        int sc = storage_class(w, n, w[j + 1]);
        quals[a++] = sc == SC_WORKGROUP                             ? CL_KERNEL_ARG_ADDRESS_LOCAL
                     : sc == SC_CROSS_WORKGROUP || sc == SC_GENERIC ? CL_KERNEL_ARG_ADDRESS_GLOBAL
                     : sc == SC_UNIFORM_CONSTANT                    ? CL_KERNEL_ARG_ADDRESS_CONSTANT
                                                                    : CL_KERNEL_ARG_ADDRESS_PRIVATE;
        j += l2;
      }
      return a == n_args ? 0 : -1;
    }
    i += len;
  }
  return -1;
}

int zs_spirv_check(const void *spirv, size_t size, char *why, size_t cap) {
  const uint32_t *w = spirv;
  size_t n = size / 4;
  if (size % 4 || n < 5 || w[0] != 0x07230203u) {
    snprintf(why, cap, "zesim: not a SPIR-V module (size %zu bytes, magic 0x%08x)", size, n ? w[0] : 0u);
    return -1;
  }
  /* Every instruction must have a nonzero length that stays inside the module (Intel's CPU runtime loops
   * forever on a zero length). */
  for (size_t i = 5; i < n;) {
    uint32_t len = w[i] >> 16;
    if (len == 0 || i + len > n) {
      snprintf(why, cap, "zesim: malformed SPIR-V: the instruction at word %zu has length %u (module has %zu words)", i,
               len, n);
      return -1;
    }
    i += len;
  }
  return 0;
}
