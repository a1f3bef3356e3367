#!/bin/sh
# hosts/bench/device-multi.sh BUILD_DIR — issue 24 on two GPUs (nvidia-h200-x2), in one call of
# the `device` tool, as device-overlap.sh runs issue 23's:
# 1. every suite of BUILD_DIR/tests on a pool of both GPUs with gemm split over both
#    (CLOPS_TEST_POOL_CONFIG=configs/two_gpus.cfg), then test_multi_device (its own pools);
# 2. clops-bench gemm --host on one GPU and on both (configs/two_gpus.cfg), N = 8192, 16384
#    (and 32768 with BIG=1): host operands, where the split applies. Targets (issue 24): two
#    GPUs >= 1.8x one at 32768 with host operands, >= 1.9x at N >= 16384 with device operands
#    (device operands are not split yet: their rows show one GPU).
# Output goes line by line (stdbuf) to $OUT/multi-*.txt, so that a run cut by its time limit
# keeps what it printed. Carry BUILD_DIR (libclops.so*, hosts/bench/clops-bench, tests/) and
# .device/ (runtime .debs and prelude.sh, as device-overlap.sh says). About 6 minutes.
set -u
build=$1
set -- .device/debs
. .device/prelude.sh
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on this machine
export XDG_CACHE_HOME=/tmp/clops-test-cache CK_DEFAULT_TIMEOUT=600
export CLOPS_LIBRARY="$PWD/$build/libclops.so" CLOPS_SOURCE_DIR="$PWD" CLOPS_BINARY_DIR="$PWD/$build"
out=${OUT:-/tmp}
nvidia-smi -L
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    start=$(date +%s)
    CLOPS_TEST_POOL_CONFIG="$PWD/configs/two_gpus.cfg" timeout 150 stdbuf -oL "$t" \
        >"$out/multi-$name.log" 2>&1
    echo "$name: exit $?, $(($(date +%s) - start)) s — $(grep -E '^[0-9]+%' "$out/multi-$name.log")"
done
sizes=8192,16384
[ "${BIG:-0}" = 1 ] && sizes=$sizes,32768
for config in "" configs/two_gpus.cfg; do
    label=${config:-one-gpu}
    echo "== clops-bench gemm --host --sizes $sizes ${config:+--config $config}"
    # shellcheck disable=SC2086 # the config option is two words or none
    timeout 240 stdbuf -oL "$build/hosts/bench/clops-bench" gemm --sizes "$sizes" --reps 3 \
        --no-cold --host ${config:+--config $config} 2>&1 | tee "$out/multi-gemm-$(basename "$label").txt" |
        grep -E "host operands|^ *f(32|64) +[0-9]"
done
