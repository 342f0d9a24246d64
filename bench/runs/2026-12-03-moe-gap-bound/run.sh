#!/bin/bash
# The probes of 2026-12-03-moe-gap-bound.md: builds main at 64000e2 with probes.patch (timers and knobs, not for
# the product) in a worktree DIR, then runs bench pp512 at 2 threads on /work/moew (bench/runs/2026-12-02-moe-xeon16/run.sh
# makes the models) with each probe, ROUNDS rounds interleaved. usage (repository root): run.sh DIR [ROUNDS]
# Knobs of the patch (environment): XPI_STAGE_REPORT=1 prints the attention and MoE-job wall times summed over the
# run's prefill steps and, with XPI_STAGE_TWICE=1 (every MoE job run twice in a row), the CPU time of the first and
# second runs; XPI_STAGE_LINES=L stages the next MoE layer's first XPI_STAGE_MB MiB of experts during the attention
# (L cache lines per 32-key block, hint XPI_STAGE_HINT: 0 T0, 1 T1, 2 T2, 3 NTA, 4 a load), and that layer's MoE
# then runs the staged experts first; XPI_STAGE_PRE=X loads experts 0..X-1 right before the MoE jobs and runs them
# first; XPI_NOCACHE=1 makes the bench's requests skip the prefix cache (the product's prefix_cache = 0).
set -e
D=$1; R=${2:-2}; here=$(cd "$(dirname "$0")" && pwd)
[ -d "$D" ] || git worktree add --detach "$D" 64000e2
(cd "$D" && (git apply --check "$here/probes.patch" 2>/dev/null && git apply "$here/probes.patch" || true) &&
 cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 --target xpuinfer_cli >/dev/null)
B="$D/build/xpuinfer"
export XPI_STAGE_REPORT=1 XPI_NOCACHE=1
one() { # label, env..., model
  local label=$1; shift; local m=${@: -1}; local envs=("${@:1:$#-1}")
  out=$(env "${envs[@]}" "$B" bench -m /work/moew/$m -p 512 -n 0 -r 6 -t 2 2>&1)
  echo "$label $m $(echo "$out" | grep "^| " | tail -1 | cut -d"|" -f8) tok/s | $(echo "$out" | grep -E '^(TWICE|STAGE)' | tr '\n' ' ')"
}
for r in $(seq $R); do
  echo "== round $r"
  for m in moe2b moe3b; do one twice XPI_STAGE_TWICE=1 $m; done
  for c in "0 2 48" "128 2 48" "512 2 48" "512 0 48" "512 3 48" "512 4 48" "512 2 16" "512 4 16"; do
    set -- $c; one "stage L=$1 hint=$2 MB=$3" XPI_STAGE_LINES=$1 XPI_STAGE_HINT=$2 XPI_STAGE_MB=$3 moe2b
  done
  for p in 0 8 20; do one "pre X=$p" XPI_STAGE_PRE=$p moe2b; done
done
