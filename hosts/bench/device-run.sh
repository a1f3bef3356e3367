#!/bin/sh
# hosts/bench/device-run.sh BUILD_DIR [AREA...] — run on the GPU machine through the `device`
# tool: every test suite on its NVIDIA OpenCL device, then clops-bench's areas (default: all).
# The machine reaches no package registry: carry BUILD_DIR (built here) and .device/ (runtime
# .debs from ../shared/device/fetch-runtime-debs.sh, prelude.sh, and lib/ with libsubunit for
# the tests). Test output goes to $OUT/tests.log, the areas' tables to $OUT/bench.txt.
set -u
build=$1
shift
areas=${*:-gemm lu memory mandelbrot}
# POSIX sh's `.` passes no arguments: the prelude reads its folder from $1.
set -- .device/debs
. .device/prelude.sh
export LD_LIBRARY_PATH="$PWD/.device/lib:$LD_LIBRARY_PATH"
export CLOPS_LIBRARY="$PWD/$build/libclops.so" CLOPS_SOURCE_DIR="$PWD"
export CLOPS_BINARY_DIR="$PWD/$build" XDG_CACHE_HOME=/tmp/clops-test-cache
export CLOPS_POOL_STATS_CHILD="$PWD/$build/tests/pool_stats_child"
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$build/hosts/cli/clops" devices
for t in "$build"/tests/test_*; do
    name=$(basename "$t")
    "$t" >"$out/$name.log" 2>&1
    echo "$name: exit $? — $(grep -E '^[0-9]+%' "$out/$name.log")"
    { echo "== $name"; cat "$out/$name.log"; } >>"$out/tests.log"
    rm -f "$out/$name.log"
done
for area in $areas; do
    options=
    [ "$area" = mandelbrot ] && options="--config configs/gpu_cpu.cfg"
    echo "== clops-bench $area $options"
    # shellcheck disable=SC2086 # the options are words
    "$build/hosts/bench/clops-bench" "$area" $options 2>&1 | tee -a "$out/bench.txt"
done
