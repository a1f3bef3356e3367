#!/bin/sh
# hosts/bench/device-multi.sh BUILD_DIR — issue 24 on two GPUs (nvidia-h200-x2), in one call of
# the `device` tool, as device-overlap.sh runs issue 23's:
# 1. every suite of BUILD_DIR/tests on a pool of both GPUs with gemm, lu and solve split over
#    both (CLOPS_TEST_POOL_CONFIG=configs/two_gpus.cfg); test_multi_device and test_lu_multi
#    make their own pools of the two GPUs;
# 2. clops-bench gemm on one GPU and on both (configs/two_gpus.cfg), N = 8192, 16384 (and 32768
#    with BIG=1), device operands (on GPU 0; the other GPU's part moves through pinned host
#    memory) and host operands. Targets (issue 24): two GPUs >= 1.9x one at N >= 16384 with
#    device operands, >= 1.8x at 32768 with host operands;
# 3. clops-bench lu (lu and solve, f32 and f64) on one GPU and on both, N = 16384 (and 32768,
#    49152 with BIG=1). Target: lu f64 on two GPUs >= 1.6x one at 32768 (cuSOLVERMg: 51.7
#    TFLOP/s there).
# 4. clops-bench mandelbrot on one GPU and on both: the whole set split "1" (4096^2; two GPUs
#    took 17.2 ms against 0.94 on one before the bridges), the deep zoom dynamic. Target: a
#    dynamic split never slower than the fastest device alone, >= 0.95 of the sum of the two.
# Output goes line by line (stdbuf) to $OUT/multi-*.txt, so that a run cut by its time limit
# keeps what it printed. Carry BUILD_DIR (libclops.so*, hosts/bench/clops-bench, tests/) and
# .device/ (runtime .debs and prelude.sh, as device-overlap.sh says). About 9 minutes (BIG=1:
# split it, SKIP_SUITES=1 leaves step 1 out).
set -u
build=$1
set -- .device/debs
. .device/prelude.sh
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on this machine
export XDG_CACHE_HOME=/tmp/clops-test-cache CK_DEFAULT_TIMEOUT=600
export CLOPS_LIBRARY="$PWD/$build/libclops.so" CLOPS_SOURCE_DIR="$PWD" CLOPS_BINARY_DIR="$PWD/$build"
out=${OUT:-/tmp}
nvidia-smi -L
if [ "${SKIP_SUITES:-0}" != 1 ]; then
    for t in "$build"/tests/test_*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        start=$(date +%s)
        CLOPS_TEST_POOL_CONFIG="$PWD/configs/two_gpus.cfg" timeout 150 stdbuf -oL "$t" \
            >"$out/multi-$name.log" 2>&1
        echo "$name: exit $?, $(($(date +%s) - start)) s — $(grep -E '^[0-9]+%' "$out/multi-$name.log")"
    done
fi
sizes=8192,16384
[ "${BIG:-0}" = 1 ] && sizes=$sizes,32768
for config in "" configs/two_gpus.cfg; do
    label=${config:-one-gpu}
    echo "== clops-bench gemm --host --sizes $sizes ${config:+--config $config}"
    # shellcheck disable=SC2086 # the config option is two words or none
    timeout 300 stdbuf -oL "$build/hosts/bench/clops-bench" gemm --sizes "$sizes" --reps 3 \
        --no-cold --host ${config:+--config $config} 2>&1 | tee "$out/multi-gemm-$(basename "$label").txt" |
        grep -E "operands|^ *f(32|64) +[0-9]"
done
lu_sizes=16384
[ "${BIG:-0}" = 1 ] && lu_sizes=16384,32768,49152
for config in "" configs/two_gpus.cfg; do
    label=${config:-one-gpu}
    echo "== clops-bench lu --sizes $lu_sizes ${config:+--config $config}"
    # shellcheck disable=SC2086 # the config option is two words or none
    timeout 300 stdbuf -oL "$build/hosts/bench/clops-bench" lu --sizes "$lu_sizes" --reps 3 \
        ${config:+--config $config} 2>&1 | tee "$out/multi-lu-$(basename "$label").txt" |
        grep -E "^ *(lu|solve)|f(32|64)"
done
for config in "" configs/two_gpus.cfg; do
    label=${config:-one-gpu}
    echo "== clops-bench mandelbrot --size 4096 ${config:+--config $config}"
    # shellcheck disable=SC2086 # the config option is two words or none
    timeout 180 stdbuf -oL "$build/hosts/bench/clops-bench" mandelbrot --size 4096 --reps 5 \
        ${config:+--config $config} 2>&1 | tee "$out/multi-mandelbrot-$(basename "$label").txt"
done
