"""`xpuinfer bench` on the bundled model: the --json lines have exactly the documented fields and types, one per
(quant, depth, test) in order, with min <= median <= max and gb_s only for tg; the table has the same rows; bad
options fail with a clear message and no output. Speeds themselves are not checked (never in tests)."""
import json
import os
import subprocess

CLI = os.environ["XPI_CLI"]
MODEL = os.path.join(os.environ["XPI_SOURCE_DIR"], "examples", "models", "tinyfortunes")
KEYS = {"test", "depth", "quant", "threads", "isa", "kernels", "tok_s", "tok_s_min", "tok_s_max", "gb_s"}
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def bench(args):
    return subprocess.run([CLI, "bench", "-m", MODEL] + args, capture_output=True, text=True)


common = ["-p", "8,16", "-n", "4", "-r", "3", "-d", "0,20", "--quant", "bf16,q8,q4", "-t", "2"]
p = bench(common + ["--json"])
if p.returncode != 0:
    fail(f"bench --json exited {p.returncode}: {p.stderr.strip()}")
lines = [json.loads(line) for line in p.stdout.splitlines()]
want = [(q, d, t) for q in ["bf16", "q8", "q4"] for d in [0, 20] for t in ["pp8", "pp16", "tg4"]]
got = [(o.get("quant"), o.get("depth"), o.get("test")) for o in lines]
if got != want:
    fail(f"tests in order: {got} != {want}")
for o in lines:
    if set(o) != KEYS:
        fail(f"fields {sorted(o)} != {sorted(KEYS)}")
        continue
    if o["threads"] != 2:
        fail(f"{o}: threads should be 2")
    if o["isa"] != "auto" or not o["kernels"].startswith("auto (" + o["quant"] + ": decode "):
        fail(f"{o}: want isa auto and kernels naming the table, the dtype and its decode kernel")
    if not (isinstance(o["tok_s"], float) and 0 < o["tok_s_min"] <= o["tok_s"] <= o["tok_s_max"]):
        fail(f"{o}: want 0 < min <= median <= max")
    if o["test"].startswith("pp") != (o["gb_s"] is None):
        fail(f"{o}: gb_s must be null exactly for pp tests")
    if o["gb_s"] is not None and not o["gb_s"] > 0:
        fail(f"{o}: tg gb_s must be positive")

p = bench(common)
rows = [line for line in p.stdout.splitlines() if line.startswith("| tinyfortunes")]
if p.returncode != 0 or len(rows) != len(want):
    fail(f"table: exit {p.returncode}, {len(rows)} rows (want {len(want)}): {p.stdout!r} {p.stderr!r}")
for r in rows:
    cells = [c.strip() for c in r.strip("|").split("|")]
    if len(cells) != 10 or cells[4] not in {"pp8", "pp16", "tg4"}:
        fail(f"table row {r!r}: want 10 cells (model .. GB/s, kernels)")

# --cpu-isa: each table in turn (forced whole tables; scalar exists everywhere), named in "isa" and "kernels"
p = bench(["-p", "8", "-n", "2", "-r", "1", "--quant", "q4", "-t", "2", "--cpu-isa", "scalar,auto", "--json"])
isa_lines = [json.loads(line) for line in p.stdout.splitlines()] if p.returncode == 0 else []
if [(o["isa"], o["test"]) for o in isa_lines] != [("scalar", "pp8"), ("scalar", "tg2"), ("auto", "pp8"), ("auto", "tg2")]:
    fail(f"--cpu-isa scalar,auto: {isa_lines} {p.stderr!r}")
elif not all(o["kernels"] == "scalar (q4: decode scalar, prefill scalar)" for o in isa_lines[:2]):
    fail(f"--cpu-isa scalar: kernels {[o['kernels'] for o in isa_lines[:2]]}")

for args, needle in [(["-p", "8,x"], "-p"), (["-r", "0"], "-r"), (["--quant", "q3"], "q3"),
                     (["-d", "-5"], "-d"), (["--cpu-isa", "sse9"], "sse9")]:
    p = bench(args + ["--json"])
    if p.returncode == 0 or p.stdout.strip() or needle not in p.stderr:
        fail(f"bench {args}: want a failure naming {needle!r}, got exit {p.returncode}, "
             f"stdout {p.stdout!r}, stderr {p.stderr!r}")
# --parallel: llama-batched-bench's tests, pp then tg for each (npp, npl), aggregate tok/s
PKEYS = {"test", "n_parallel", "quant", "threads", "isa", "kernels", "tok_s", "tok_s_min", "tok_s_max"}
p = bench(["--parallel", "1,3", "-p", "32,64", "-n", "4", "-r", "2", "-t", "2", "--quant", "bf16,q4", "--json"])
if p.returncode != 0:
    fail(f"bench --parallel exited {p.returncode}: {p.stderr.strip()}")
plines = [json.loads(line) for line in p.stdout.splitlines()]
want = [(q, n, t) for q in ["bf16", "q4"] for pp in [32, 64] for n in [1, 3] for t in [f"pp{pp}", "tg4"]]
got = [(o.get("quant"), o.get("n_parallel"), o.get("test")) for o in plines]
if got != want:
    fail(f"--parallel tests in order: {got} != {want}")
for o in plines:
    if set(o) != PKEYS or not 0 < o["tok_s_min"] <= o["tok_s"] <= o["tok_s_max"]:
        fail(f"--parallel line {o}")
    elif o["isa"] != "auto" or not o["kernels"].startswith("auto (" + o["quant"] + ": decode "):
        fail(f"--parallel line names its kernels: {o}")
# --cpu-isa with --parallel: the forced table runs the batch (scalar exists everywhere)
p = bench(["--parallel", "2", "-p", "8", "-n", "2", "-r", "1", "--quant", "q4", "--cpu-isa", "scalar", "--json"])
slines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
if p.returncode != 0 or len(slines) != 2 or not all(o["isa"] == "scalar" and o["kernels"].startswith("scalar (q4:")
                                                    for o in slines):
    fail(f"--parallel --cpu-isa scalar: exit {p.returncode}, {slines}")
p = bench(["--parallel", "2", "-p", "16", "-n", "2", "-r", "1"])
rows = [line for line in p.stdout.splitlines() if line.startswith("| tinyfortunes")]
if p.returncode != 0 or len(rows) != 2:
    fail(f"--parallel table: exit {p.returncode}, {rows}")
for args, needle in [(["--parallel", "0"], "--parallel"), (["--parallel", "2", "-d", "8"], "depth"),
                     (["--kv-pool", "1G"], "--parallel"), (["--parallel", "2", "--kv-pool", "lots"], "--kv-pool")]:
    p = bench(args + ["--json"])
    if p.returncode == 0 or p.stdout.strip() or needle not in p.stderr:
        fail(f"bench {args}: want a failure naming {needle!r}, got exit {p.returncode}, stderr {p.stderr!r}")

p = subprocess.run([CLI, "bench", "-m", "/nonexistent/model", "--json"], capture_output=True, text=True)
if p.returncode == 0 or "/nonexistent/model" not in p.stderr:
    fail(f"bench on a missing model: exit {p.returncode}, stderr {p.stderr!r}")

print(f"{len(lines)} json lines, {len(rows)} table rows checked; {failures} failures")
raise SystemExit(1 if failures else 0)
