#!/bin/sh
# hosts/bench/device-run.sh BUILD_DIR [BENCH_OPTIONS...] — run on the GPU machine through the
# `device` tool: the suites on its NVIDIA OpenCL device, then clops-bench. The machine reaches no
# package registry: carry BUILD_DIR (built here) and .device/ (runtime .debs from
# ../shared/device/fetch-runtime-debs.sh, prelude.sh, and lib/ with libsubunit for the tests).
set -u
build=$1
shift
bench_options="$*"
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
for t in test_abi test_invoke test_pool test_gemm; do
    "$build/tests/$t" >"$out/$t.log" 2>&1
    echo "$t: exit $? — $(grep -E '^[0-9]+%' "$out/$t.log")"
done
"$build/hosts/cli/clops" run --output-dir /tmp/demo-out configs/pipelines/demo.cfg
# shellcheck disable=SC2086 # the options are words
"$build/hosts/bench/clops-bench" $bench_options 2>&1 | tee "$out/bench.txt"
