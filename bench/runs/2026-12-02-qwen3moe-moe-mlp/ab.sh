#!/bin/bash
# usage: ab.sh OUT ROUNDS THREADS-LIST BIN-DIRS...
out=$1; rounds=$2; ths=$3; shift 3
for r in $(seq $rounds); do for t in $ths; do for m in moe dense; do for d in "$@"; do
  res=$( { LD_LIBRARY_PATH=$d perf stat -x, -e task-clock $d/xpuinfer bench -m /work/llama-moe/models/$m -p 512 -n 0 -t $t -r 3 --json 2>&1; } )
  tps=$(echo "$res" | grep -o '"tok_s":[ ]*[0-9.]*' | head -1 | grep -o '[0-9.]*$')
  cpu=$(echo "$res" | grep task-clock | cut -d, -f1)
  echo "$r $t $m $(basename $d) $tps $cpu $(cut -d' ' -f1 /proc/loadavg)" >> $out
done; done; done; done
