#!/bin/sh
# hosts/bench/device-run.sh BUILD_DIR [AREA...] — run on the GPU machine through the `device`
# tool: every test suite on its NVIDIA OpenCL device (and the drop-in's lapack_test_numerics),
# then clops-bench's areas (default: all). An AREA is one word, or an area and its options as
# one quoted argument ("gemm --sizes 4096,8192 --peers"); the area "lapack" runs
# clops-lapack-bench (the drop-in's host-array calls) with the options that follow it.
# The machine reaches no package registry: carry BUILD_DIR (built here) and .device/ (runtime
# .debs from ../shared/device/fetch-runtime-debs.sh, prelude.sh, and lib/ with libsubunit for
# the tests). Test output goes to $OUT/tests.log, the areas' tables to $OUT/bench.txt.
# CLOPS_LIBRARY (absolute) runs the areas on another plugin (an earlier build's, for before and
# after in one run); CLOPS_DEVICE_TESTS=0 skips the suites.
set -u
build=$1
shift
# The areas, one a line (the prelude below takes over "$@").
specs=$(if [ $# -eq 0 ]; then printf '%s\n' gemm lu memory mandelbrot; else printf '%s\n' "$@"; fi)
# POSIX sh's `.` passes no arguments: the prelude reads its folder from $1.
set -- .device/debs
. .device/prelude.sh
export LD_LIBRARY_PATH="$PWD/.device/lib:$LD_LIBRARY_PATH"
export CLOPS_LIBRARY="${CLOPS_LIBRARY:-$PWD/$build/libclops.so}" CLOPS_SOURCE_DIR="$PWD"
export CLOPS_BINARY_DIR="$PWD/$build" XDG_CACHE_HOME=/tmp/clops-test-cache
export CLOPS_POOL_STATS_CHILD="$PWD/$build/tests/pool_stats_child"
export CLOPS_CONCURRENT_CREATE_CHILD="$PWD/$build/tests/concurrent_create_child"
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$build/hosts/cli/clops" devices
[ "${CLOPS_DEVICE_TESTS:-1}" = 0 ] || for t in "$build"/tests/test_*; do
    name=$(basename "$t")
    timeout 300 "$t" >"$out/$name.log" 2>&1
    echo "$name: exit $? — $(grep -E '^[0-9]+%' "$out/$name.log")"
    { echo "== $name"; cat "$out/$name.log"; } >>"$out/tests.log"
    rm -f "$out/$name.log"
done
numerics="$build/hosts/lapack/lapack_test_numerics"
if [ "${CLOPS_DEVICE_TESTS:-1}" != 0 ] && [ -x "$numerics" ]; then
    "$numerics" >>"$out/tests.log" 2>&1
    echo "lapack_test_numerics: exit $?"
fi
printf '%s\n' "$specs" | while IFS= read -r spec; do
    # shellcheck disable=SC2086 # an area and its options are words
    set -- $spec
    area=$1
    shift
    [ "$area" = mandelbrot ] && [ $# -eq 0 ] && set -- --config configs/gpu_cpu.cfg
    echo "== $area $*"
    if [ "$area" = lapack ]; then
        "$build/hosts/lapack/clops-lapack-bench" "$@" </dev/null 2>&1 | tee -a "$out/bench.txt"
    else
        "$build/hosts/bench/clops-bench" "$area" "$@" </dev/null 2>&1 | tee -a "$out/bench.txt"
    fi
done
