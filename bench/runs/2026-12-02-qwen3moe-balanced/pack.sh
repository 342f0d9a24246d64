#!/usr/bin/env bash
# Packs run.sh's needs into DIR/pack.tar.xz: base/ and new/ (xpuinfer + libxpuinfer of each), lib/ (the shared
# libraries they load, which the host lacks), bin/mkrandmodel, run.sh. DIR: an ignored folder of the checkout the
# device tool sends (the session's), named in carry. usage: pack.sh DIR BASE_BUILD NEW_BUILD (run from the repo root)
set -euo pipefail
D=$1; BB=$2; NB=$3; H=$(dirname "$0")
S=$(mktemp -d); mkdir -p "$S/bin" "$S/lib" "$S/base" "$S/new"
cp -L "$BB/xpuinfer" "$BB/libxpuinfer.so.0" "$S/base/"; cp -L "$NB/xpuinfer" "$NB/libxpuinfer.so.0" "$S/new/"
cp -L "$NB/mkrandmodel" "$S/bin/"
for so in $(ldd "$NB/xpuinfer" "$NB/mkrandmodel" | awk '$3 ~ /^\// {print $3}' | sort -u); do
  case "$(basename "$so")" in libc.so*|libm.so*|ld-linux*|libxpuinfer*) ;; *) cp -L "$so" "$S/lib/" ;; esac
done
cp "$H/run.sh" "$S/"
echo "base $(cat "$BB/commit.txt" 2>/dev/null || echo main), new $(git rev-parse --short HEAD)" > "$S/commit.txt"
rm -rf "$D"; mkdir -p "$D"; tar -C "$S" -cJf "$D/pack.tar.xz" .; rm -rf "$S"
du -sh "$D"
