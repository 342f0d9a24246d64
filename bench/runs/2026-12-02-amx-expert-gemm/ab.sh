#!/bin/bash
# ab.sh ROUNDS "models" QUANT : A (base, libs in /tmp/abA) vs B (new, /tmp/abB), pp512 tok/s, alternating rounds;
# models in /work/moew (2026-12-02-moe-xeon16/run.sh makes them), the xpuinfer of build/ (LD_LIBRARY_PATH picks the lib)
for ((r=0;r<$1;r++)); do for m in $2; do for L in abA abB; do
  tps=$(LD_LIBRARY_PATH=/tmp/$L build/xpuinfer bench -m /work/moew/$m -p 512 -n 0 -r ${N:-3} -t 2 --quant $3 --json 2>/dev/null | python3 -c "import json,sys;print(json.loads(sys.stdin.read())['tok_s'])")
  echo "$r $3 $m $L $tps"; done; done; done
