#!/usr/bin/env bash
# libxpuinfer as others consume it (tests/consumers/tests.cmake runs each step as a ctest):
#   install       cmake --install into a scratch prefix (the fixture of the steps below)
#   symbols       the installed archive's and .so's global symbols are all xpi_
#   pkgconfig     app.c built with `pkg-config --cflags --libs xpuinfer` runs
#   static        app.c linked with `pkg-config --static --libs xpuinfer` (the archive) runs, no NEEDED libxpuinfer
#   find_package  a CMake project with find_package(xpuinfer CONFIG REQUIRED): shared and static targets run
#   subdirectory  a CMake project that add_subdirectory()s the source tree (CPU-only: -DXPUINFER_XPU=OFF, which
#                 must compile no SPIR-V) builds; its app and the subproject's CLI generate
#   deb           cpack -G DEB, dpkg -x into a scratch root, the CLI from there generates; Depends cover NEEDED
#   version       CMake's version = xpi_version() = xpuinfer --version / -V = xpuinfer.pc = ConfigVersion = .deb
# Environment: XPI_SOURCE_DIR, XPI_BUILD_DIR, XPI_VERSION (CMake's PROJECT_VERSION), CMAKE_COMMAND, CPACK_COMMAND,
# CC; work goes to $XPI_BUILD_DIR/consumers.
set -euo pipefail
step=$1
src=$XPI_SOURCE_DIR
build=$XPI_BUILD_DIR
work=$build/consumers
prefix=$work/prefix
model=$src/examples/models/tinyfortunes
golden="is like a raisin, not a stain you can."  # tinyfortunes, greedy after "A computer"
cc=${CC:-cc}
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
unset PKG_CONFIG_LIBDIR

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_golden() { # $1: output file
  grep -qF "$golden" "$1" || { cat "$1" >&2; fail "the output lacks the golden continuation '$golden'"; }
}
no_needed_xpuinfer() {
  if readelf -d "$1" | grep -q 'NEEDED.*libxpuinfer'; then readelf -d "$1" >&2; fail "$1 needs libxpuinfer.so"; fi
}
# Runs in a clean environment: nothing of the build tree on the library path.
clean_run() { env -i PATH=/usr/bin:/bin HOME="$work" "$@"; }

case $step in
install)
  rm -rf "$work" && mkdir -p "$work"
  "$CMAKE_COMMAND" --install "$build" --prefix "$prefix" >"$work/install.log"
  for f in bin/xpuinfer include/xpuinfer.h lib/libxpuinfer.so lib/libxpuinfer.so.0 "lib/libxpuinfer.so.$XPI_VERSION" \
           lib/libxpuinfer.a lib/pkgconfig/xpuinfer.pc lib/cmake/xpuinfer/xpuinferConfig.cmake \
           lib/cmake/xpuinfer/xpuinferConfigVersion.cmake; do
    [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
  done
  [ "$(readlink "$prefix/lib/libxpuinfer.so")" = libxpuinfer.so.0 ] || fail "libxpuinfer.so does not link to the SONAME"
  readelf -d "$prefix/lib/libxpuinfer.so.$XPI_VERSION" | grep -q 'SONAME.*\[libxpuinfer.so.0\]' || fail "SONAME is not libxpuinfer.so.0"
  # Relocatable: moved elsewhere, the CLI finds its library ($ORIGIN) and the .pc file its prefix (${pcfiledir}).
  moved=$work/moved-prefix
  mv "$prefix" "$moved"
  clean_run "$moved/bin/xpuinfer" generate -m "$model" -p "A computer" -n 16 --device cpu >"$work/cli.out" 2>"$work/cli.err" ||
    { cat "$work/cli.err" >&2; fail "the installed CLI failed (moved prefix)"; }
  expect_golden "$work/cli.out"
  inc=$(PKG_CONFIG_PATH=$moved/lib/pkgconfig pkg-config --variable=includedir xpuinfer)
  [ -f "$inc/xpuinfer.h" ] || fail "xpuinfer.pc of a moved prefix points at $inc"
  mv "$moved" "$prefix"
  ;;
symbols)
  # Global defined symbols (nm: T/D/B/R/... upper case, not U/w/V/v weak undefined): only the xpi_ API.
  bad=$(nm -g --defined-only "$prefix/lib/libxpuinfer.a" | awk 'NF==3 && $3 !~ /^xpi_/ {print $3}')
  [ -z "$bad" ] || fail "libxpuinfer.a exports non-xpi_ symbols: $(echo $bad | head -c 600)"
  n=$(nm -g --defined-only "$prefix/lib/libxpuinfer.a" | awk 'NF==3' | wc -l)
  [ "$n" -gt 20 ] || fail "libxpuinfer.a exports only $n symbols: is the API there?"
  bad=$(nm -D --defined-only "$prefix/lib/libxpuinfer.so" | awk 'NF==3 && $3 !~ /^xpi_/ {print $3}')
  [ -z "$bad" ] || fail "libxpuinfer.so exports non-xpi_ symbols: $(echo $bad | head -c 600)"
  # The archive and the shared library export the same API.
  diff <(nm -g --defined-only "$prefix/lib/libxpuinfer.a" | awk 'NF==3{print $3}' | sort) \
       <(nm -D --defined-only "$prefix/lib/libxpuinfer.so" | awk 'NF==3{print $3}' | sort) ||
    fail "libxpuinfer.a and libxpuinfer.so export different symbols"
  echo "$n xpi_ symbols, nothing else"
  ;;
pkgconfig)
  d=$work/pkgconfig && rm -rf "$d" && mkdir -p "$d"
  # shellcheck disable=SC2046
  "$cc" -Wall -Wextra -Werror -o "$d/app" "$src/tests/consumers/app.c" $(pkg-config --cflags --libs xpuinfer)
  readelf -d "$d/app" | grep -q 'NEEDED.*libxpuinfer.so.0' || fail "the pkg-config build does not use libxpuinfer.so.0"
  clean_run env LD_LIBRARY_PATH="$prefix/lib" "$d/app" "$model" "A computer" 16 >"$d/out"
  expect_golden "$d/out"
  ;;
static)
  d=$work/static && rm -rf "$d" && mkdir -p "$d"
  # The linker prefers libxpuinfer.so to libxpuinfer.a for -lxpuinfer: name the archive (-l:libxpuinfer.a).
  flags=$(pkg-config --static --libs xpuinfer)
  echo "pkg-config --static --libs xpuinfer: $flags"
  # shellcheck disable=SC2046,SC2086
  "$cc" -Wall -Wextra -Werror -o "$d/app" "$src/tests/consumers/app.c" $(pkg-config --cflags xpuinfer) ${flags/-lxpuinfer/-l:libxpuinfer.a}
  no_needed_xpuinfer "$d/app"
  # Run it with the shared library out of reach.
  clean_run "$d/app" "$model" "A computer" 16 >"$d/out"
  expect_golden "$d/out"
  ;;
find_package)
  d=$work/find_package && rm -rf "$d"
  "$CMAKE_COMMAND" -S "$src/tests/consumers/find_package" -B "$d" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$cc" >"$d.log" 2>&1 || { cat "$d.log" >&2; fail "configuring the find_package project"; }
  grep -q "xpuinfer_VERSION=$XPI_VERSION" "$d.log" || fail "find_package did not report version $XPI_VERSION"
  "$CMAKE_COMMAND" --build "$d" >>"$d.log" 2>&1 || { cat "$d.log" >&2; fail "building the find_package project"; }
  no_needed_xpuinfer "$d/app_static"
  readelf -d "$d/app_shared" | grep -q 'NEEDED.*libxpuinfer.so.0' || fail "xpuinfer::xpuinfer is not the shared library"
  clean_run "$d/app_shared" "$model" "A computer" 16 >"$d/out_shared"
  expect_golden "$d/out_shared"
  clean_run "$d/app_static" "$model" "A computer" 16 >"$d/out_static"
  expect_golden "$d/out_static"
  ;;
subdirectory)
  d=$work/subdirectory && rm -rf "$d"
  "$CMAKE_COMMAND" -S "$src/tests/consumers/subdirectory" -B "$d" -DXPUINFER_SOURCE_DIR="$src" -DXPUINFER_XPU=OFF \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" >"$d.log" 2>&1 ||
    { cat "$d.log" >&2; fail "configuring the add_subdirectory project"; }
  "$CMAKE_COMMAND" --build "$d" -j"$(nproc)" >>"$d.log" 2>&1 || { cat "$d.log" >&2; fail "building the add_subdirectory project"; }
  # Not the top-level project: no tests, tools or install rules; CPU-only: no SPIR-V compiled or embedded.
  [ ! -e "$d/xpuinfer/tests" ] || fail "the subproject configured its tests"
  [ ! -e "$d/xpuinfer/mkrandmodel" ] || fail "the subproject built its tools"
  if find "$d" -name '*.spv' -o -name 'xpi_spv_*' | grep -q .; then fail "XPUINFER_XPU=OFF compiled SPIR-V"; fi
  if grep -q 'clang-15\|llvm-spirv' "$d.log"; then fail "XPUINFER_XPU=OFF ran the SPIR-V tools"; fi
  clean_run env LD_LIBRARY_PATH="$d/xpuinfer" "$d/app" "$model" "A computer" 16 >"$d/out"
  expect_golden "$d/out"
  # The CPU-only CLI generates, and says that XPU support was not built.
  clean_run "$d/xpuinfer/xpuinfer" generate -m "$model" -p "A computer" -n 16 >"$d/cli.out" 2>"$d/cli.err" ||
    { cat "$d/cli.err" >&2; fail "the CPU-only CLI failed"; }
  expect_golden "$d/cli.out"
  clean_run "$d/xpuinfer/xpuinfer" devices >"$d/devices.out"
  grep -q '^False 0$' "$d/devices.out" || fail "devices: expected 'False 0'"
  grep -q 'XPU support was not built' "$d/devices.out" || { cat "$d/devices.out" >&2; fail "devices does not say XPU support was not built"; }
  if clean_run "$d/xpuinfer/xpuinfer" generate -m "$model" -p x -n 1 --device xpu >/dev/null 2>"$d/xpu.err"; then
    fail "--device xpu succeeded in a CPU-only build"
  fi
  grep -q 'XPU support was not built' "$d/xpu.err" || { cat "$d/xpu.err" >&2; fail "--device xpu does not say why it failed"; }
  ;;
deb)
  d=$work/deb && rm -rf "$d" && mkdir -p "$d/root"
  (cd "$build" && "$CPACK_COMMAND" -G DEB -B "$d/out" >"$d/cpack.log" 2>&1) || { cat "$d/cpack.log" >&2; fail "cpack -G DEB"; }
  debs=("$d"/out/*.deb)
  [ ${#debs[@]} -eq 3 ] || fail "expected 3 packages, got: ${debs[*]}"
  for deb in "${debs[@]}"; do
    dpkg-deb -f "$deb" Package Version Depends Recommends
    dpkg -x "$deb" "$d/root"
  done
  lib=$(ls "$d"/out/libxpuinfer[0-9]*_*.deb)
  # Every library the .so and the CLI need comes from a package their Depends name.
  for pair in "$lib:$d/root/usr/lib/libxpuinfer.so.$XPI_VERSION" "$(ls "$d"/out/xpuinfer_*.deb):$d/root/usr/bin/xpuinfer"; do
    deb=${pair%%:*} bin=${pair#*:}
    depends=$(dpkg-deb -f "$deb" Depends)
    for so in $(readelf -d "$bin" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'); do
      case $so in libxpuinfer.so.*) pkg=$(dpkg-deb -f "$lib" Package) ;;
      # awk reads all of ldconfig's output: an early exit would kill ldconfig with SIGPIPE, which pipefail + set -e
      # turn into a silent failure of this step
      *) path=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ && !f {print $NF; f = 1}')
         [ -n "$path" ] || fail "$so (NEEDED by $bin) is not installed here"
         pkg=""
         real=$(readlink -f "$path")
         for p in "$path" "$real" "${real#/usr}" "/usr$path"; do # merged /usr: dpkg knows one spelling
           [ -n "$pkg" ] || pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1 || true)
         done
         [ -n "$pkg" ] || fail "no Debian package owns $path ($so)" ;;
      esac
      echo "$depends" | tr ',' '\n' | grep -q "^ *$pkg\b" || fail "$(basename "$deb"): Depends ($depends) lacks $pkg, which has $so"
    done
  done
  clean_run env LD_LIBRARY_PATH="$d/root/usr/lib" "$d/root/usr/bin/xpuinfer" generate -m "$model" -p "A computer" -n 16 \
    --device cpu >"$d/cli.out" 2>"$d/cli.err" || { cat "$d/cli.err" >&2; fail "the CLI from the .deb failed"; }
  expect_golden "$d/cli.out"
  ;;
version)
  v=$XPI_VERSION
  got=$(clean_run "$prefix/bin/xpuinfer" --version)
  [ "$got" = "libxpuinfer $v" ] || fail "xpuinfer --version printed '$got', expected 'libxpuinfer $v'"
  got=$(clean_run "$prefix/bin/xpuinfer" -V)
  [ "$got" = "libxpuinfer $v" ] || fail "xpuinfer -V printed '$got', expected 'libxpuinfer $v'"
  got=$(pkg-config --modversion xpuinfer)
  [ "$got" = "$v" ] || fail "xpuinfer.pc says $got, expected $v"
  grep -q "set(PACKAGE_VERSION \"$v\")" "$prefix/lib/cmake/xpuinfer/xpuinferConfigVersion.cmake" ||
    fail "xpuinferConfigVersion.cmake does not say $v"
  grep -q "libxpuinfer.so.$v\$" <(ls "$prefix/lib/libxpuinfer.so.$v") || fail "the shared library is not libxpuinfer.so.$v"
  # xpi_version() from the installed library (the pkgconfig step's app prints it).
  d=$work/version && rm -rf "$d" && mkdir -p "$d"
  # shellcheck disable=SC2046
  "$cc" -o "$d/app" "$src/tests/consumers/app.c" $(pkg-config --cflags --libs xpuinfer)
  got=$(clean_run env LD_LIBRARY_PATH="$prefix/lib" "$d/app" /nonexistent x 0 2>/dev/null | head -1 || true)
  [ "$got" = "xpi_version $v header $v" ] || fail "app printed '$got', expected 'xpi_version $v header $v'"
  if [ -d "$work/deb/out" ]; then
    for deb in "$work"/deb/out/*.deb; do
      got=$(dpkg-deb -f "$deb" Version)
      [ "${got%-*}" = "$v" ] || fail "$(basename "$deb") has version $got, expected $v-<release>"
    done
  fi
  echo "version $v everywhere"
  ;;
*) fail "unknown step '$step'" ;;
esac
echo "ok: $step"
