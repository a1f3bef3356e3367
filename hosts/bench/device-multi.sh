#!/bin/sh
# hosts/bench/device-multi.sh BUILD_DIR — issue 24 on two GPUs (nvidia-h200-x2), in calls of the
# `device` tool, as device-overlap.sh runs issue 23's. STEPS (default "probe suites gemm lu
# mandel") picks what runs, in that order:
# probe: clops-probe-devices (plain OpenCL): whether the GPUs run side by side when a host
#    thread drives each (and with which way of waiting), and pinned transfers alone and at once;
# suites: every suite of BUILD_DIR/tests on a pool of both GPUs with gemm, lu and solve split
#    over both (CLOPS_TEST_POOL_CONFIG=configs/two_gpus.cfg); test_multi_device and test_lu_multi
#    make their own pools of the two GPUs;
# gemm: clops-bench gemm on one GPU (with --peers: cuBLAS) and on both (configs/two_gpus.cfg),
#    N = GEMM_SIZES (default 8192,16384,32768), GEMM_DTYPES (default f32,f64), device
#    operands (on GPU 0; the other GPU's part moves through pinned host memory) and host
#    operands. Targets (issue 24): two GPUs
#    >= 1.9x one at N >= 16384 with device operands, >= 1.8x at 32768 with host operands;
# lu: clops-bench lu (lu and solve, f32 and f64) on one GPU (with --peers: cuSOLVER) and on
#    both, N = LU_SIZES (default 16384,32768). Target: lu f64 on two GPUs >= 1.6x one at 32768
#    (cuSOLVERMg: 51.7 TFLOP/s there);
# mandel: clops-bench mandelbrot on one GPU, on both (the whole set split "1" at 4096^2 and
#    16384^2: two GPUs took 17.2 ms against 0.94 on one before the bridges) and on GPU 0 + the
#    CPU (configs/gpu_cpu.cfg: the deep zoom, dynamic). Target: a dynamic split never slower
#    than the fastest device alone, >= 0.95 of the sum of the two.
# split-log: clops-bench gemm -v on the pool of both GPUs, device operands, GEMM_SIZES (default
#    8192,16384) x GEMM_DTYPES: each split call's share and end by device, and the splits
#    judged slower than one device (the library's debug lines);
# LU_DTYPES (default f32,f64) the element types of the lu step;
# ONE_GPU=0 leaves the one-GPU runs of gemm and lu out (their figures from an earlier call as
#    the denominators: a call's 600 s do not hold both at 32768); SUITES (default: every
#    BUILD_DIR/tests/test_*) names the suites the suites step runs, such as
#    SUITES="test_multi_device test_lu_multi"; SUITE_LIMIT (default 150) the seconds each may
#    run; its results go to /tmp/multi/multi-NAME.ck test by test (Check's log), so that one cut
#    by the limit shows how far it got. test_multi_device's sweep over a pool's first split call
#    (a pool of both GPUs made per failing call) fails every SWEEP_STRIDE-th call (default 8)
#    and the last: the whole sweep ran past 150 s (ctest, on PoCL, fails every one).
# COUNTS (default "2"): the pools of GPUs besides one, each of the first N GPUs
#    (configs/two_gpus.cfg, four_gpus.cfg, eight_gpus.cfg): issue 27 on nvidia-h200-x4 and -x8,
#    COUNTS="2 4 8" GEMM_SIZES=16384,32768,65536 LU_SIZES=32768,49152,65536 STEPS="suites gemm lu"
#    (targets: GEMM >= 0.9 x the count at N >= 32768 with device operands, LU f64 >= 0.7 x the
#    count at 65536); the suites then run on the largest pool, test_multi_device and
#    test_lu_multi on all its GPUs (CLOPS_TEST_SPLIT_DEVICES).
# Output goes line by line (stdbuf) to /tmp/multi/*, packed into $OUT/multi.tgz after each step
# (a call brings 8 files back at most), so that a run cut by its time limit keeps what it
# printed. BUILD_DIR holds libclops.so*, hosts/bench/clops-bench and tests/ (a
# build's, stripped to fit the 64 MiB a call carries:
#   mkdir -p .device/b/tests .device/b/hosts/bench && cp -a build/libclops.so* .device/b &&
#   cp build/hosts/bench/clops-bench build/hosts/bench/clops-probe-devices .device/b/hosts/bench &&
#   cp build/tests/test_*
#   build/tests/*_child .device/b/tests && strip .device/b/tests/* .device/b/hosts/bench/*),
# carried with .device/debs, .device/lib (libsubunit) and .device/prelude.sh
# (../shared/device/prelude.sh). Each step takes 2-4 minutes: one call runs two or three.
set -u
build=$1
set -- .device/debs
. .device/prelude.sh
export LD_LIBRARY_PATH="$PWD/.device/lib:$LD_LIBRARY_PATH"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on this machine
export XDG_CACHE_HOME=/tmp/clops-test-cache CK_DEFAULT_TIMEOUT=600
export CLOPS_LIBRARY="$PWD/$build/libclops.so" CLOPS_SOURCE_DIR="$PWD" CLOPS_BINARY_DIR="$PWD/$build"
# The children test_pool and test_threads start (ctest sets these; device-run.sh does too).
export CLOPS_POOL_STATS_CHILD="$PWD/$build/tests/pool_stats_child"
export CLOPS_CONCURRENT_CREATE_CHILD="$PWD/$build/tests/concurrent_create_child"
counts=${COUNTS:-2}
pool_config() { # the configuration of the first $1 GPUs
    case $1 in 2) echo configs/two_gpus.cfg ;; 4) echo configs/four_gpus.cfg ;; 8) echo configs/eight_gpus.cfg ;; esac
}
largest=$(echo "$counts" | tr ' ' '\n' | sort -n | tail -1)
export CLOPS_TEST_SPLIT_DEVICES="$largest"
out=/tmp/multi
mkdir -p $out
bench="$build/hosts/bench/clops-bench"
began=$(date +%s)
# No new measurement starts after DEADLINE seconds (default 430), none runs over LIMIT (150):
# a call has 600 at most.
late() { [ $(($(date +%s) - began)) -ge "${DEADLINE:-430}" ] && echo "(deadline: the rest left out)"; }
# clops-bench AREA on one GPU (with --peers: the vendor libraries beside it) and on the pools of
# COUNTS, a process per size, printing what PATTERN matches of its output; returns 1 once the
# deadline has passed.
one_and_two() {
    area=$1 sizes=$2 pattern=$3
    shift 3
    for n in $(echo "$sizes" | tr , ' '); do
        for config in $([ "${ONE_GPU:-1}" = 0 ] || echo one) $(for c in $counts; do pool_config "$c"; done); do
            [ "$config" = one ] && config=""
            late && return 1
            label=$(basename "${config:-one-gpu}" .cfg)
            echo "== clops-bench $area --sizes $n $* ${config:+--config $config}"
            # shellcheck disable=SC2046 # the options are words or none
            timeout "${LIMIT:-150}" stdbuf -oL "$bench" "$area" --sizes "$n" --reps 3 "$@" \
                $([ -z "$config" ] && echo --peers) ${config:+--config $config} \
                >"$out/multi-$area-$label-$n.txt" 2>&1
            echo "exit $?, $(($(date +%s) - began)) s"
            grep -E "$pattern" "$out/multi-$area-$label-$n.txt"
        done
    done
    return 0 # not grep's status: a run that printed nothing must not end the steps
}

nvidia-smi -L
for step in ${STEPS:-probe suites gemm lu mandel}; do
    case $step in
    suites)
        for t in $(if [ -n "${SUITES:-}" ]; then printf "$build/tests/%s " $SUITES; else echo "$build"/tests/test_*; fi); do
            [ -x "$t" ] || continue
            late && break
            name=$(basename "$t")
            start=$(date +%s)
            CLOPS_TEST_POOL_CONFIG="$PWD/$(pool_config "$largest")" \
                CLOPS_TEST_SWEEP_STRIDE="${SWEEP_STRIDE:-8}" CK_LOG_FILE_NAME="$out/multi-$name.ck" \
                timeout "${SUITE_LIMIT:-150}" stdbuf -oL "$t" >"$out/multi-$name.log" 2>&1
            echo "$name: exit $?, $(($(date +%s) - start)) s — $(grep -E '^[0-9]+%' "$out/multi-$name.log")"
            grep -E ":[FE]:" "$out/multi-$name.log" | head -3
        done
        ;;
    gemm)
        one_and_two gemm "${GEMM_SIZES:-8192,16384,32768}" \
            "operands +[0-9]|^ *f(32|64) +[0-9]|^gemm " --no-cold --host \
            --dtypes "${GEMM_DTYPES:-f32,f64}" || break
        ;;
    lu)
        one_and_two lu "${LU_SIZES:-16384,32768}" "^ *f(32|64) +[0-9]|^(lu|solve)" \
            --dtypes "${LU_DTYPES:-f32,f64}" || break
        ;;
    split-log)
        # One GEMM split's parts by device, call by call (the library's debug lines: each
        # device's share of the work and when it was done, a split judged slower than one
        # device), for GEMM_SIZES x GEMM_DTYPES on device operands over the pool of both GPUs.
        for n in $(echo "${GEMM_SIZES:-8192,16384}" | tr , ' '); do
            late && break
            echo "== clops-bench gemm --sizes $n --dtypes ${GEMM_DTYPES:-f32,f64} -v (two GPUs)"
            timeout "${LIMIT:-150}" stdbuf -oL "$bench" gemm --sizes "$n" --reps 5 --no-cold \
                --dtypes "${GEMM_DTYPES:-f32,f64}" --config configs/two_gpus.cfg -v \
                >"$out/multi-split-log-$n.txt" 2>&1
            echo "exit $?, $(($(date +%s) - began)) s"
            grep -E "device [0-9]+: [0-9]+ parts|split took|runs whole|^ *f(32|64) +[0-9]" \
                "$out/multi-split-log-$n.txt"
        done
        ;;
    probe)
        timeout 120 stdbuf -oL "$build/hosts/bench/clops-probe-devices" --ms 20 --reps 5 --mib 256 \
            2>&1 | tee "$out/multi-probe.txt"
        ;;
    mandel)
        for config in "" configs/two_gpus.cfg configs/gpu_cpu.cfg; do
            label=$(basename "${config:-one-gpu}" .cfg)
            for size in 4096 16384; do
                late && break 3
                echo "== clops-bench mandelbrot --size $size ${config:+--config $config}"
                timeout 100 stdbuf -oL "$bench" mandelbrot --size $size --reps 5 \
                    ${config:+--config $config} >"$out/multi-mandel-$label-$size.txt" 2>&1
                echo "exit $?"
                grep -vE "^$|^clops-bench|^device" "$out/multi-mandel-$label-$size.txt" | head -40
            done
        done
        ;;
    esac
    tar czf "${OUT:-/tmp}/multi.tgz" -C /tmp multi
done
