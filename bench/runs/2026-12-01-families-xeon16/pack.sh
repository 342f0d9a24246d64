#!/usr/bin/env bash
# Packs what the 16-core host needs for the per-family bench into DIR/pack.tar.xz (~6 MB): this checkout's
# xpuinfer, libxpuinfer and every shared library they load (the host has no apt and no -dev packages, so it cannot
# build xpuinfer from the sources: the binaries travel with their libraries, checked there with ldd), mkrandmodel
# and the scripts. The tokenizer is taken there from the sent checkout's tests/data/tokenizers/qwen3 (the tree
# already holds ~55 MB of the 64 MiB a call may send). DIR must lie in the checkout the device tool sends (the
# session's, /work/main: a helper's worktree does not travel) under an ignored folder, e.g. /work/main/build-fambench15,
# named in carry. Run from the repository root after building (build/). Usage: [RUN=other run.sh] .../pack.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { sed -n 2,8p "$0" >&2; exit 2; }
D=$1; H=$(dirname "$0")
S=$(mktemp -d); mkdir -p "$S/bin" "$S/lib"
cp -L build/xpuinfer build/mkrandmodel "$S/bin/"
for so in $(ldd build/xpuinfer build/mkrandmodel | awk '$3 ~ /^\// {print $3}' | sort -u); do
  case "$(basename "$so")" in libc.so*|libm.so*|ld-linux*) ;; *) cp -L "$so" "$S/lib/" ;; esac
done
cp "${RUN:-$H/run.sh}" "$S/run.sh"; cp "$H/sizes.py" "$S/"
git rev-parse --short HEAD > "$S/commit.txt"
git diff --quiet || echo " (with uncommitted changes)" >> "$S/commit.txt"
rm -rf "$D"; mkdir -p "$D"; tar -C "$S" -cJf "$D/pack.tar.xz" .; rm -rf "$S"
du -sh "$D"
