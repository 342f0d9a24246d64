#!/usr/bin/env bash
# Packs what the 16-core host needs for the per-family bench into DIR: this checkout's xpuinfer, libxpuinfer and
# every shared library they load (the host has no apt and no dev packages, so it cannot build xpuinfer from the
# sources: the binaries travel with their libraries, checked there with ldd), mkrandmodel, the Qwen3 tokenizer and
# the scripts. DIR must lie in the checkout the device tool sends (the session's, /work/main: a helper's worktree
# does not travel) under an ignored folder, e.g. /work/main/build-fambench15, carried by name.
# Run from the repository root after building (build/). Usage: bench/2026-12-01-families-xeon16/pack.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { sed -n 2,7p "$0" >&2; exit 2; }
D=$1; H=$(dirname "$0")
rm -rf "$D"; mkdir -p "$D/bin" "$D/lib" "$D/tok"
cp -L build/xpuinfer build/mkrandmodel "$D/bin/"
for so in $(ldd build/xpuinfer build/mkrandmodel | awk '$3 ~ /^\// {print $3}' | sort -u); do
  case "$(basename "$so")" in libc.so*|libm.so*|ld-linux*) ;; *) cp -L "$so" "$D/lib/" ;; esac
done
cp tests/data/tokenizers/qwen3/* "$D/tok/"
cp "$H/run.sh" "$H/sizes.py" "$D/"
git rev-parse --short HEAD > "$D/commit.txt"
git diff --quiet || echo " (with uncommitted changes)" >> "$D/commit.txt"
du -sh "$D"
