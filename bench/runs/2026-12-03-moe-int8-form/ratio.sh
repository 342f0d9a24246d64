#!/bin/bash
# MoE / dense-peer pp512 tok/s ratios at 2 threads, each pair run back to back, ROUNDS rounds (models:
# /work/moew, made by bench/runs/2026-12-02-moe-xeon16/run.sh). The peers have equal matmul FLOPs a token, so this is
# the FLOP-rate ratio.
# usage (repository root, after building): ratio.sh ROUNDS QUANT [XPUINFER]; prints each round's ratios
R=$1; Q=$2; B=${3:-build/xpuinfer}
qa=""; [ "$Q" != bf16 ] && qa="--quant $Q"
for r in $(seq $R); do
  line="round $r"
  for p in "dense2b moe2b" "dense3b moe3b"; do
    set -- $p
    d=$($B bench -m /work/moew/$1 -p 512 -n 0 -r 6 -t 2 $qa 2>&1 | tail -1 | cut -d'|' -f8)
    m=$($B bench -m /work/moew/$2 -p 512 -n 0 -r 6 -t 2 $qa 2>&1 | tail -1 | cut -d'|' -f8)
    line="$line $2 $(python3 -c "print(f'{$m/$d:.3f} ({$m:.0f}/{$d:.0f})')")"
  done
  echo "$line"
done
