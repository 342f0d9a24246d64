"""`xpuinfer devices` through the stock Level Zero loader and zesim: ZE_AFFINITY_MASK, ZE_ENABLE_PCI_ID_DEVICE_ORDER
and ZE_FLAT_DEVICE_HIERARCHY behave as Intel's compute-runtime makes them behave (cards sorted first -- discrete
before integrated unless PCI order is on, then by PCI address --, the mask applied to the sorted list, survivors
kept in sorted order), the library sorts by PCI address itself across drivers, and no driver prints `False 0`."""
import json
import os
import subprocess
import sys

CLI = os.environ["XPI_CLI"]
ZESIM = os.environ["XPI_ZESIM"]
ZESIM_B = os.environ["XPI_ZESIM_B"]
failures = 0
passed = 0

THREE = "0000:3a:00.0=2G,0000:1a:00.0,0000:9a:00.0"
WITH_IGPU = "0000:00:02.0/integrated,0000:3a:00.0,0000:1a:00.0"
TILES = "0000:3a:00.0/tiles=2,0000:1a:00.0"


def run(env_extra, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZE_", "ZESIM_"))}
    env.update(env_extra)
    p = subprocess.run([CLI, "devices", *args], env=env, capture_output=True, text=True, timeout=120)
    return p


def table(out):
    """(first line, [(id, name, pci)] of the XPU rows)."""
    lines = out.splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("xpu:"):
            break
        parts = line.split()
        pci = next(p for p in parts if p.count(":") == 2)
        name = line[8:48].strip()
        rows.append((parts[0], name, pci))
    return lines[0], rows


def case(label, env, want_pcis, want_names=None, summary_has=None):
    global failures, passed
    env = dict(env)
    p = run(env)
    first, rows = table(p.stdout)
    want_first = f"{'True' if want_pcis else 'False'} {len(want_pcis)}"
    problems = []
    if p.returncode != 0:
        problems.append(f"exit {p.returncode}: {p.stderr.strip()}")
    if first != want_first:
        problems.append(f"first line {first!r}, want {want_first!r}")
    got_pcis = [r[2] for r in rows]
    if got_pcis != want_pcis:
        problems.append(f"PCI order {got_pcis}, want {want_pcis}")
    if [r[0] for r in rows] != [f"xpu:{i}" for i in range(len(want_pcis))]:
        problems.append(f"ids {[r[0] for r in rows]}")
    if want_names and [r[1] for r in rows] != want_names:
        problems.append(f"names {[r[1] for r in rows]}, want {want_names}")
    if summary_has and summary_has not in p.stdout:
        problems.append(f"output lacks {summary_has!r}")
    for k, v in env.items():
        if k.startswith("ZE_") and f"  {k}={v}" not in p.stdout:
            problems.append(f"environment section lacks {k}={v}")
    if problems:
        failures += 1
        print(f"FAIL {label}: " + "; ".join(problems) + "\n--- output:\n" + p.stdout + p.stderr, file=sys.stderr)
    else:
        passed += 1


A, B_, C = "0000:1a:00.0", "0000:3a:00.0", "0000:9a:00.0"
one = {"ZE_ENABLE_ALT_DRIVERS": ZESIM}

# No driver at all (ZE_ENABLE_ALT_DRIVERS unset, no Intel GPU here): False 0, exit 0.
case("no driver", {}, [], summary_has="zeInit failed")

# Three cards listed unsorted: Intel's driver sorts them by PCI address.
case("3 cards", {**one, "ZESIM_DEVICES": THREE}, [A, B_, C])
case("mask 0,2", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "0,2"}, [A, C])
case("mask 2,0 keeps sorted order", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "2,0"}, [A, C])
case("out-of-range entries skipped", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "0,5,2,99"}, [A, C])
case("all entries out of range", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "7,8"}, [])
case("negative wraps out of range", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "-1"}, [])
case("empty mask: all", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": ""}, [A, B_, C])
case("mask 'default': all", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "default"}, [A, B_, C])
case("hex entry", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "0x1"}, [B_])
case("octal entry 010 = 8", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "010"}, [])
case("trailing junk ignored", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "1abc"}, [B_])
case("duplicates harmless", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "1,1,1"}, [B_])
case("garbage mask: driver fails", {**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "a,1"}, [],
     summary_has="entry 'a' is not a device index")

# PCI ordering: off puts discrete cards before the integrated one; on is pure PCI order.
I = "0000:00:02.0"
case("igpu, order off", {**one, "ZESIM_DEVICES": WITH_IGPU}, [A, B_, I])
case("igpu, order on", {**one, "ZESIM_DEVICES": WITH_IGPU, "ZE_ENABLE_PCI_ID_DEVICE_ORDER": "1"}, [I, A, B_])
case("igpu, order 0", {**one, "ZESIM_DEVICES": WITH_IGPU, "ZE_ENABLE_PCI_ID_DEVICE_ORDER": "0"}, [A, B_, I])
case("igpu, mask 0, order off", {**one, "ZESIM_DEVICES": WITH_IGPU, "ZE_AFFINITY_MASK": "0"}, [A])
case("igpu, mask 0, order on",
     {**one, "ZESIM_DEVICES": WITH_IGPU, "ZE_AFFINITY_MASK": "0", "ZE_ENABLE_PCI_ID_DEVICE_ORDER": "1"}, [I])
# A driver that lists devices in probe order: the library itself sorts when asked.
case("probe-order driver, order off", {**one, "ZESIM_DEVICES": WITH_IGPU, "ZESIM_ORDER": "probe"}, [I, B_, A])
case("probe-order driver, order on",
     {**one, "ZESIM_DEVICES": WITH_IGPU, "ZESIM_ORDER": "probe", "ZE_ENABLE_PCI_ID_DEVICE_ORDER": "1"}, [I, A, B_])

# Two drivers: off keeps driver order, on sorts across drivers.
two = {"ZE_ENABLE_ALT_DRIVERS": f"{ZESIM},{ZESIM_B}", "ZESIM_DEVICES": "0000:3a:00.0,0000:1a:00.0",
       "ZESIM_B_DEVICES": "0000:2a:00.0"}
case("two drivers, order off", two, [A, B_, "0000:2a:00.0"])
case("two drivers, order on", {**two, "ZE_ENABLE_PCI_ID_DEVICE_ORDER": "1"}, [A, "0000:2a:00.0", B_])
case("two drivers, mask 0 applies per driver", {**two, "ZE_AFFINITY_MASK": "0"}, [A, "0000:2a:00.0"])

# Tiles: FLAT (the default) lists each tile, COMPOSITE lists cards; X.Y selects a tile only in COMPOSITE.
X = "zesim Software XPU"
case("tiles, FLAT default", {**one, "ZESIM_DEVICES": TILES}, [A, B_, B_], [X, X + " (tile 0)", X + " (tile 1)"])
case("tiles, FLAT", {**one, "ZESIM_DEVICES": TILES, "ZE_FLAT_DEVICE_HIERARCHY": "FLAT"}, [A, B_, B_])
case("tiles, COMPOSITE", {**one, "ZESIM_DEVICES": TILES, "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"}, [A, B_], [X, X])
case("tiles, COMPOSITE mask 1.1",
     {**one, "ZESIM_DEVICES": TILES, "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE", "ZE_AFFINITY_MASK": "1.1"}, [B_],
     [X + " (tile 1)"])
case("tiles, FLAT ignores X.Y", {**one, "ZESIM_DEVICES": TILES, "ZE_AFFINITY_MASK": "1.1"}, [])
case("tiles, FLAT mask 2", {**one, "ZESIM_DEVICES": TILES, "ZE_AFFINITY_MASK": "2"}, [B_], [X + " (tile 1)"])

# --json
p = run({**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "0,2"}, "--json")
try:
    j = json.loads(p.stdout)
    ok = (j["available"] is True and j["device_count"] == 2 and [d["pci"] for d in j["devices"]] == [A, C]
          and [d["id"] for d in j["devices"]] == ["xpu:0", "xpu:1"] and j["devices"][0]["total_memory"] == 8 << 30
          and j["devices"][0]["eu_count"] == 128 and j["devices"][0]["bf16"] is True
          and j["env"]["ZE_AFFINITY_MASK"] == "0,2" and j["env"]["ZE_FLAT_DEVICE_HIERARCHY"] is None
          and j["cpu"]["id"] == "cpu" and p.returncode == 0)
except (ValueError, KeyError) as e:
    ok = False
    print("json error", e, file=sys.stderr)
if ok:
    passed += 1
else:
    failures += 1
    print("FAIL --json:\n" + p.stdout + p.stderr, file=sys.stderr)
p = run({**one, "ZESIM_DEVICES": THREE, "ZE_AFFINITY_MASK": "1"}, "--json")
j = json.loads(p.stdout)
if j["devices"][0]["pci"] == B_ and j["devices"][0]["total_memory"] == 2 << 30:
    passed += 1
else:
    failures += 1
    print("FAIL --json memory of 3a (2G):\n" + p.stdout, file=sys.stderr)
p = run({}, "--json")
j = json.loads(p.stdout)
if j["available"] is False and j["device_count"] == 0 and j["devices"] == [] and p.returncode == 0:
    passed += 1
else:
    failures += 1
    print("FAIL --json without driver:\n" + p.stdout, file=sys.stderr)
# Usage errors.
p = run({}, "--bogus")
if p.returncode == 2 and "unknown option" in p.stderr:
    passed += 1
else:
    failures += 1
    print("FAIL unknown option:", p.returncode, p.stderr, file=sys.stderr)

print(f"{passed} passed, {failures} failed")
sys.exit(1 if failures else 0)
