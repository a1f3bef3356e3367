#!/bin/sh
# hosts/bench/device-overlap.sh BUILD_DIR [BEFORE_LIBRARY] — issue 23's speed targets on the GPU
# machine (the H200), in one call of the `device` tool, run as device-run.sh runs the areas:
# 1. `clops-bench overlap --sizes 1024,2048,4096 --calls 8`: eight GEMMs on host operands on two
#    streams against one after the other (target: speedup >= 1.5 at N = 4096), and the time of
#    submit for a call its checks refuse and for a 16 x 16 gemm (target: median <= 10 us);
# 2. the synchronous calls before and after (target: within 3 %, reduce included): the gemm
#    --host and memory runs of RESULTS.md's 2026-11-28 H200 entry, each with BEFORE_LIBRARY (a
#    libclops.so built at 403f2aa, the last commit before issue 23) and with this build's,
#    alternately, $ROUNDS times (default 2): a cell's rounds give its spread.
# The machine reaches no package registry: carry BUILD_DIR (hosts/bench/clops-bench and
# libclops.so*, built here), .device/ (runtime .debs from ../shared/device/fetch-runtime-debs.sh
# and prelude.sh) and BEFORE_LIBRARY (without it, part 2 runs this build's library alone). The
# tables go to $OUT/overlap.txt and $OUT/sync.txt. About 5 minutes on the H200.
set -u
build=$1
before=${2:-}
rounds=${ROUNDS:-2}
# POSIX sh's `.` passes no arguments: the prelude reads its folder from $1.
set -- .device/debs
. .device/prelude.sh
export XDG_CACHE_HOME=/tmp/clops-test-cache
after="$PWD/$build/libclops.so"
bench="$build/hosts/bench/clops-bench"
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
[ -x "$build/hosts/cli/clops" ] && CLOPS_LIBRARY="$after" "$build/hosts/cli/clops" devices

# One run of clops-bench on a library, its output appended to a file: "== <label>: <options>".
# (sh has no local variables: these names are measure's alone.)
measure() {
    m_file=$1 m_label=$2 m_library=$3
    shift 3
    echo "== $m_label: clops-bench $*" | tee -a "$m_file"
    CLOPS_LIBRARY="$m_library" timeout 300 "$bench" "$@" </dev/null 2>&1 | tee -a "$m_file"
}

# 1. Overlap and submit: ABI 1.4, this build only.
measure "$out/overlap.txt" after "$after" overlap --sizes 1024,2048,4096 --calls 8 --reps 5 \
    --submit-calls 100000

# 2. The synchronous calls, before and after alternately (the order swapped every round, so
#    neither library always runs on a warmer machine).
[ -n "$before" ] && case $before in /*) ;; *) before="$PWD/$before" ;; esac
round=1
while [ "$round" -le "$rounds" ]; do
    if [ $((round % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
    for which in $order; do
        library=$after
        if [ "$which" = before ]; then
            [ -n "$before" ] || continue
            library=$before
        fi
        for spec in "gemm --sizes 128,256,512 --host --reps 300" \
            "gemm --sizes 64,256,1024 --host --reps 100" \
            "memory --reduce-size 65536 --transpose-size 256 --reps 300" \
            "memory --reduce-size 4194304 --transpose-size 2048 --reps 100"; do
            # shellcheck disable=SC2086 # an area and its options are words
            measure "$out/sync.txt" "$which (round $round)" "$library" $spec
        done
    done
    round=$((round + 1))
done
