"""The model graph on XPUs through the stock Level Zero loader and zesim: --device-map auto over 3 devices gives
the tinyfortunes golden greedy ids (the residual stream crosses devices through the host), --quant q4/q8 on xpu:0
and over a device map gives the CPU's ids with the same --quant, and a split whose
share of the weights exceeds a device's memory is refused before loading, naming the device."""
import json
import os
import subprocess
import sys

CLI = os.environ["XPI_CLI"]
MODEL = os.path.join(os.environ["XPI_SOURCE_DIR"], "examples", "models", "tinyfortunes")
GOLD = json.load(open(os.path.join(os.environ["XPI_TEST_DATA"], "goldens", "tinyfortunes.json")))["A computer"]
failures = 0


def run(devices, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZE_", "ZESIM_"))}
    env.update({"ZE_ENABLE_ALT_DRIVERS": os.environ["XPI_ZESIM"], "ZESIM_DEVICES": devices})
    return subprocess.run([CLI, "generate", "-m", MODEL, "-p", "A computer", "-q", "--greedy", "-n", "16", *args],
                          env=env, capture_output=True, text=True, timeout=600)


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", msg)


THREE = "0000:3a:00.0=64M,0000:1a:00.0=64M,0000:9a:00.0=64M"
for args in (["--device-map", "auto"], ["--device", "xpu:1"]):
    p = run(THREE, "--json", *args)
    check(p.returncode == 0, f"{args}: rc {p.returncode}: {p.stderr.strip()}")
    if p.returncode == 0:
        out = json.loads(p.stdout)
        check(out["ids"] == GOLD["greedy_new_ids"], f"{args}: ids {out['ids']} != {GOLD['greedy_new_ids']}")

# --quant on the XPU: xpu:0 at q4 and a device map at q8 give the CPU's greedy ids with the same
# --quant (the CPU on its AVX2 kernels, as tests/xpu/tests.cmake explains), the first 8 ids: at q8 the CPU's
# logits of its 11th id and the XPU's are 0.03 apart, a near tie either may take (tests/xpu/test_xpu_quant_model.c)
for quant, args in (("q4", ["--device", "xpu:0"]), ("q8", ["--device-map", "auto"])):
    cpu = subprocess.run([CLI, "generate", "-m", MODEL, "-p", "A computer", "-q", "--greedy", "-n", "16", "--json",
                          "--quant", quant], env={**os.environ, "XPI_CPU_ISA": "avx2"}, capture_output=True,
                         text=True, timeout=600)
    p = run(THREE, "--json", "--quant", quant, *args)
    check(cpu.returncode == 0 and p.returncode == 0, f"--quant {quant} {args}: rc {p.returncode} {p.stderr.strip()}"
          f" (cpu rc {cpu.returncode} {cpu.stderr.strip()})")
    if cpu.returncode == 0 and p.returncode == 0:
        want, got = json.loads(cpu.stdout)["ids"][:8], json.loads(p.stdout)["ids"][:8]
        check(got == want, f"--quant {quant} {args}: ids {got} != cpu {want}")

# 8 MiB of bf16 weights over 3 devices of 2 MiB: some device cannot hold its share (src/model/placement.c)
p = run("0000:3a:00.0=2M,0000:1a:00.0=2M,0000:9a:00.0=2M", "--device-map", "auto")
lines = p.stderr.strip().splitlines()
check(p.returncode != 0 and len(lines) == 1 and "does not fit on xpu:" in lines[0] and "MiB" in lines[0],
      f"too small: rc {p.returncode}, stderr {p.stderr!r}")
# bench --model-perf: the performance model's JSON (tests/xpu/test_xpu_perf.c checks the counts themselves);
# the predictions follow from its own numbers: t = moved / bandwidth + launches x launch overhead
env = {k: v for k, v in os.environ.items() if not k.startswith(("ZE_", "ZESIM_"))}
env.update({"ZE_ENABLE_ALT_DRIVERS": os.environ["XPI_ZESIM"], "ZESIM_DEVICES": THREE})
p = subprocess.run([CLI, "bench", "-m", MODEL, "--device", "xpu:0", "--model-perf", "--ctx", "64", "--launch-us", "2",
                    "--json"], env=env, capture_output=True, text=True, timeout=600)
check(p.returncode == 0, f"--model-perf: rc {p.returncode}: {p.stderr.strip()}")
if p.returncode == 0:
    r = json.loads(p.stdout)
    moved, must = r["bytes_read"] + r["bytes_written"], r["weight_bytes"] + r["kv_bytes"]
    check(r["n_ctx"] == 64 and r["launches"] == 6 * 4 + 3,  # 6 a layer (tests/xpu/test_xpu_launches.c) + 3
          f"--model-perf: {r['n_ctx']} positions, {r['launches']} launches")
    check(abs(r["moved_over_must"] - moved / must) < 1e-3, f"--model-perf: ratio {r['moved_over_must']}")
    check(sum(k["launches"] for k in r["kernels"]) == r["launches"], "--model-perf: kernels add up")
    names = [g["name"] for g in r["gpus"]]
    check(names == ["Arc A770 (16 GB)", "Arc B580", "Data Center GPU Max 1550"], f"--model-perf: GPUs {names}")
    for g in r["gpus"]:
        t = moved / (g["gb_s"] * 1e9) + r["launches"] * 2e-6
        check(abs(g["tok_s"] - 1 / t) < 0.01 * (1 / t),
              f"--model-perf {g['name']}: {g['tok_s']} t/s, model says {1 / t:.2f}")
p = subprocess.run([CLI, "bench", "-m", MODEL, "--device", "cpu", "--model-perf"], env=env, capture_output=True,
                   text=True, timeout=600)
check(p.returncode != 0 and "not an XPU" in p.stderr, f"--model-perf on the CPU: rc {p.returncode}, {p.stderr!r}")
print("failures:", failures)
sys.exit(1 if failures else 0)
