#!/bin/bash
# ab2.sh ROUNDS "models" ISA : base vs new libs, pp512 tok/s
for ((r=0;r<$1;r++)); do for m in $2; do for L in moeD moeN; do
  tps=$(LD_LIBRARY_PATH=/work/$L/lib /work/moeN/bin/xpuinfer bench -m /work/moew/$m -p 512 -n 0 -r ${N:-2} -t 2 --quant ${Q:-bf16} --cpu-isa $3 2>/dev/null | grep pp512 | awk -F'|' '{print $8}')
  echo "$3 $m $L $tps"; done; done; done
