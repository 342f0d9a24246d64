#!/usr/bin/env python3
"""ISA checks of the embedded SPIR-V kernels with Intel's offline compiler ocloc (Debian intel-opencl-icd 22.43,
IGC 1.0.12504; scripts/setup.sh --test unpacks it into .deb-ocloc). zesim runs the kernels on a CPU, which cannot
show what Intel's GPU compiler makes of them; this test compiles every module for real GPU targets with the
runtime's build options, disassembles it and checks, for every target where the backend would use the module:
  - every kernel of the module compiles;
  - the DPAS modules contain `dpas` instructions (the sub-group-16 form builds "successfully" on DG2 without any:
    the GEMM then returns the bias only), in the int8 form for the q8/q4 GEMMs (their counts are printed);
  - the kernels of a decode step, and the DPAS GEMMs (their tiles are meant to live in registers), use no
    scratch (register spills, private arrays placed in memory);
  - with -ze-opt-greater-than-4GB-buffer-required (xpi_ze_module_flags: where relaxed limits can create a buffer
    over maxMemAllocSize) every global memory access is stateless A64, none through a binding table.
A failure names the target, the module, the kernel and the reason. Without ocloc the test is skipped (77), or
fails where XPI_TEST_OCLOC=required (scripts/test.sh, so CI cannot pass without running it)."""
import os
import re
import struct
import subprocess
import sys
import tempfile

# What each target reports to the backend's tier rule (xpu_tier_select; tests/xpu/test_xpu_tier_select.c checks
# the rule on these profiles): sub-group sizes and whether it has DPAS.
TARGETS = {
    "tgllp": {"sg": (8, 16, 32), "dpas": False},    # Xe-LP (Iris Xe, Tiger Lake)
    "acm-g10": {"sg": (8, 16, 32), "dpas": True},   # Xe-HPG (Arc A770, DG2)
    "pvc": {"sg": (16, 32), "dpas": True},          # Xe-HPC (Data Center GPU Max)
}
MODULES = ("portable", "tuned", "dpas", "dpas8")
LARGE = "-ze-opt-greater-than-4GB-buffer-required"
# Kernels launched in every decode step (GEMV, norms, RoPE, KV store, decode attention, sampling): no scratch.
HOT = {"xpi_embed", "xpi_add", "xpi_swiglu", "xpi_argmax", "xpi_topk", "xpi_rmsnorm", "xpi_rope", "xpi_gemv_f32",
       "xpi_gemv_f16", "xpi_gemv_bf16", "xpi_kv_store", "xpi_sdpa", "xpi_flash_attention_2", "xpi_gemv_sg_f32",
       "xpi_gemv_sg_f16", "xpi_gemv_sg_bf16", "xpi_rmsnorm_sg",
       # the fused decode forms
       "xpi_gemv3_f32", "xpi_gemv3_f16", "xpi_gemv3_bf16", "xpi_gemv_glu_f32", "xpi_gemv_glu_f16",
       "xpi_gemv_glu_bf16", "xpi_gemv3_sg_f32", "xpi_gemv3_sg_f16", "xpi_gemv3_sg_bf16", "xpi_gemv_glu_sg_f32",
       "xpi_gemv_glu_sg_f16", "xpi_gemv_glu_sg_bf16",
       # q8/q4 decode: the activation quantization, the GEMVs and their fused forms (quantize the input row in
       # local memory); mixture-of-experts decode, float and q8/q4 experts
       "xpi_quant_act", "xpi_gemv_q8", "xpi_gemv_q4", "xpi_gemv3_q8", "xpi_gemv3_q4", "xpi_gemv_glu_q8",
       "xpi_gemv_glu_q4", "xpi_moe_route", "xpi_moe_matmul", "xpi_moe_combine", "xpi_moe_gemv_q8", "xpi_moe_gemv_q4",
       # the tuned tier's q8/q4 decode GEMV (block reads)
       "xpi_gemv_sg_q8", "xpi_gemv_sg_q4", "xpi_gemv3_sg_q8", "xpi_gemv3_sg_q4", "xpi_gemv_glu_sg_q8",
       "xpi_gemv_glu_sg_q4"}
# The q8/q4 GEMMs on the matrix engine: their dpas must be the int8 form.
DPAS_INT8 = {"xpi_gemm_dpas_q8", "xpi_gemm_dpas_q4"}
# The DPAS GEMMs (bf16, q8/q4) and the tuned q8/q4 GEMM: accumulator tile and operands in registers.
NO_SCRATCH = HOT | {"xpi_gemm_dpas_bf16", "xpi_gemm_dpas_q8", "xpi_gemm_dpas_q4", "xpi_gemm_sg_q8", "xpi_gemm_sg_q4"}
# xpi_sdpa is the split-K GQA decode attention and xpi_argmax the two-stage argmax (one launch each, the merge by
# the last work-group), both above.


def selected(module, target):
    """Whether the backend uses module on target (mirrors xpu_tier_select)."""
    t = TARGETS[target]
    tuned = 16 in t["sg"]
    if module == "portable":
        return True
    if module == "tuned":
        return tuned
    return tuned and t["dpas"] and min(t["sg"]) == (16 if module == "dpas" else 8)


def entry_points(spv):
    """Kernel names of a SPIR-V module (OpEntryPoint, opcode 15)."""
    words = struct.unpack("<%dI" % (len(spv) // 4), spv)
    names, i = [], 5
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xFFFF
        if n == 0:
            raise ValueError("SPIR-V instruction of length 0")
        if op == 15:
            raw = struct.pack("<%dI" % (n - 3), *words[i + 3:i + n])
            names.append(raw.split(b"\0")[0].decode())
        i += n
    return names


def patch_tokens(ptm):
    """Per kernel, {token: [payload bytes, ...]} from the disassembler's PTM.txt. ocloc 22.43 prints the tokens
    by number ("Unidentified PatchToken"); numbers from IGC's patch_list.h: 18 MEDIA_VFE_STATE (scratch
    offset, per-thread scratch size), 38 ALLOCATE_STATELESS_PRIVATE_MEMORY (.., per-thread private size @ 12)."""
    out = {}
    for chunk in re.split(r"\nKernel #\d+\n", ptm)[1:]:
        name = re.search(r"KernelName (\S+)", chunk).group(1)
        toks = {}
        for num, hexs in re.findall(r"Token (\d+)\n\t4 Size \d+\n\tHex ([^\n]*)", chunk):
            toks.setdefault(int(num), []).append(bytes(int(h, 16) for h in hexs.split()))
        out[name] = toks
    return out


def u32(b, off):
    return struct.unpack_from("<I", b + b"\0" * 8, off)[0]


def scratch_bytes(toks):
    """Per-thread scratch and private-memory bytes of a kernel."""
    s = sum(u32(p, 4) for p in toks.get(18, []))
    priv = sum(u32(p, 12) for p in toks.get(38, []))
    return s, priv


def stateful_accesses(asm):
    """Global memory messages with 32-bit addressing: through a binding table (stateful), or A32 stateless. LSC
    targets print `.ugm ... bti[N]` (N = 255: the kernel's payload, loaded at its start); the legacy dataport
    (tgllp) prints no a64 and has the binding-table index in the low byte of the descriptor: 0xFE is shared
    local memory, 0xFD the payload, 0xFF A32 stateless (private memory or a buffer, wrong past 4 GiB either
    way), anything below 0xF0 a buffer's surface."""
    bad = []
    for line in asm.splitlines():
        if "send" not in line or "//" not in line:
            continue
        comment = line.split("//", 1)[1]
        m = re.search(r"\.ugm\.\S*bti\[(\d+)\]", comment)
        if m and int(m.group(1)) < 0xF0:
            bad.append(line.strip())
            continue
        if re.search(r"send\.dc[012]", line) and "a64" not in comment and "fence" not in comment:
            desc = re.search(r"0x([0-9A-Fa-f]{8})\s+\{", line)
            bti = int(desc.group(1), 16) & 0xFF if desc else 0xFE
            if bti < 0xF0 or bti == 0xFF:
                bad.append(line.strip())
    return bad


def main():
    required = os.environ.get("XPI_TEST_OCLOC") == "required"
    root = os.environ.get("XPI_OCLOC_ROOT", "")
    ocloc = os.path.join(root, "bin", "ocloc")
    libdir = os.path.join(root, "lib", "x86_64-linux-gnu")
    env = dict(os.environ, LD_LIBRARY_PATH=libdir + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    try:
        ok = subprocess.run([ocloc, "--help"], env=env, capture_output=True).returncode == 0
    except OSError:
        ok = False
    if not ok:
        why = ("ocloc not usable at %s: run scripts/setup.sh --test (unpacks Debian's intel-opencl-icd into .deb-ocloc)"
               " or configure with -DXPI_OCLOC_ROOT=<dir with bin/ocloc>" % ocloc)
        if required:
            print("FAIL " + why)
            return 1
        print("SKIPPED: " + why)
        return 77
    spv_dir = os.environ["XPI_SPV_DIR"]
    failures, checked, stateful_default = [], 0, 0

    def fail(target, module, kernel, reason):
        failures.append("%s: module %s: kernel %s: %s" % (target, module, kernel, reason))
        print("FAIL " + failures[-1])

    with tempfile.TemporaryDirectory() as tmp:
        for module in MODULES:
            spv_path = os.path.join(spv_dir, "xpi_%s.spv" % module)
            with open(spv_path, "rb") as f:
                kernels = entry_points(f.read())
            for target in TARGETS:
                use = selected(module, target)
                for flags in ("", LARGE):
                    tag = "%s_%s_%s" % (module, target, "large" if flags else "default")
                    out, dump = os.path.join(tmp, tag), os.path.join(tmp, tag + "_dis")
                    r = subprocess.run([ocloc, "compile", "-spirv_input", "-file", spv_path, "-device", target,
                                        "-out_dir", tmp, "-output_no_suffix", "-output", tag, "-options", flags],
                                       env=env, capture_output=True, text=True)
                    if r.returncode != 0 or not os.path.exists(out):
                        if use:
                            fail(target, module, "*", "does not compile with options '%s': %s" %
                                 (flags, (r.stdout + r.stderr).strip()[-600:]))
                        else:
                            errs = [l for l in (r.stdout + r.stderr).splitlines() if "error" in l.lower()]
                            print("note: %s: module %s (not used there) does not compile: %s" %
                                  (target, module, errs[0].strip() if errs else "?"))
                        continue
                    subprocess.run([ocloc, "disasm", "-file", out, "-dump", dump, "-device", target], env=env,
                                   capture_output=True)
                    with open(os.path.join(dump, "PTM.txt")) as f:
                        toks = patch_tokens(f.read())
                    for k in kernels:
                        asm_path = os.path.join(dump, "%s_KernelHeap.asm" % k)
                        if not os.path.exists(asm_path) or k not in toks:
                            if use:
                                fail(target, module, k, "no binary/ISA for the kernel (options '%s')" % flags)
                            continue
                        with open(asm_path) as f:
                            asm = f.read()
                        n_dpas = len(re.findall(r"^\s*(\([^)]*\)\s*)?dpas", asm, re.M))
                        if module.startswith("dpas") and not use and not flags:
                            print("note: %s: module %s (not used there): %d dpas instructions" % (target, module, n_dpas))
                        if not use:
                            continue
                        checked += 1
                        if module.startswith("dpas") and not flags:
                            print("%s: module %s: %s: %d dpas instructions" % (target, module, k, n_dpas))
                        if module.startswith("dpas") and n_dpas == 0:
                            fail(target, module, k, "no dpas instruction (options '%s'): the matrix builtin was "
                                 "not lowered to the matrix engine" % flags)
                        # The q8/q4 GEMMs' dpas must be the signed int8 form (`:b` sources, `:d` destination).
                        int8_form = [l for l in asm.splitlines() if re.match(r"^\s*(\([^)]*\)\s*)?dpas", l)
                                     and re.search(r":d\s.*:b\s.*:b", l)]
                        if k in DPAS_INT8 and len(int8_form) != n_dpas:
                            fail(target, module, k, "%d of %d dpas instructions are not the int8 x int8 -> int32 "
                                 "form (options '%s')" % (n_dpas - len(int8_form), n_dpas, flags))
                        scratch, private = scratch_bytes(toks[k])
                        spills = [l.strip() for l in asm.splitlines() if re.search(r"scratch|\.ss\[", l)]
                        if k in NO_SCRATCH and (scratch or private or spills):
                            fail(target, module, k, "uses scratch (options '%s'): %d bytes per thread of scratch, "
                                 "%d of private memory%s" % (flags, scratch, private,
                                                             "; e.g. " + spills[0] if spills else ""))
                        elif scratch or private:
                            print("note: %s: %s: %s (not a decode or DPAS kernel): %d scratch + %d private bytes per thread"
                                  % (target, module, k, scratch, private))
                        if not flags:
                            stateful_default += len(stateful_accesses(asm))
                        if flags == LARGE:
                            bad = stateful_accesses(asm)
                            if bad:
                                fail(target, module, k, "32-bit (binding-table or A32) access with %s: %d messages, e.g. %s"
                                     % (LARGE, len(bad), bad[0]))
    # Without the flag IGC addresses buffers statefully on tgllp and acm-g10: a check that finds no stateful
    # message there could not find one with the flag either.
    if stateful_default == 0:
        failures.append("the stateful-access check found no binding-table access in any default build: it is blind")
        print("FAIL " + failures[-1])
    print("%d kernel/target/option combinations checked, %d failures; %d stateful messages in the default builds "
          "(expected: the flag is what makes them stateless)" % (checked, len(failures), stateful_default))
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
