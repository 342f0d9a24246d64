#!/bin/bash
R=$1; MODELS=$2; IFS=';' read -ra V <<< "$3"; Q=${Q:-bf16}; T=${T:-2}; N=${N:-3}
export LD_LIBRARY_PATH=${LIB:-/work/main/build}
for ((r=0;r<R;r++)); do for m in $MODELS; do for ((i=0;i<${#V[@]};i++)); do v=${V[$(( (i+r) % ${#V[@]} ))]}
  out=$(env $v ${XPI:-/work/moeN/bin/xpuinfer} bench -m /work/moew/$m -p 512 -n 0 -r $N -t $T --quant $Q 2>&1)
  tps=$(echo "$out" | grep pp512 | awk -F'|' '{print $8}'); xt=$(echo "$out" | grep "^XT" | sed 's/.*: //' | awk -v n=$((N+1)) '{printf "attn %.0f mlp %.0f", $5/n, ($2+$3+$4)/n}')
  echo "$r $m [$v] $tps $xt"; done; done; done
