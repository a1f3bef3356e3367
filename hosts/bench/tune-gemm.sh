#!/bin/sh
# hosts/bench/tune-gemm.sh BUILD_DIR SIZES [SETS_FILE] — times clops-bench's GEMM with each tile set below,
# forced through operators.gemm.build_options, to choose the tuning table's entry for a device.
# Run it where the device is (see device-run.sh for the GPU machine); prints one table per set.
# SETS_FILE holds one tile set per line (default: the sets below).
set -u
build=$1
sizes=$2
sets=${3:-}
while read -r tiles; do
    [ -z "$tiles" ] && continue
    cfg=$(mktemp --suffix=.cfg)
    printf 'operators = { gemm = { build_options = "%s"; }; };\n' "$tiles" >"$cfg"
    echo "== $tiles"
    "$build/hosts/bench/clops-bench" --sizes "$sizes" --reps 3 --no-cold --config "$cfg" 2>&1 |
        grep -E '^(f32|f64) '
    rm -f "$cfg"
done <<SETS
$(if [ -n "$sets" ]; then cat "$sets"; else sed -n '/^-D/p' "$0"; fi)
SETS
exit 0
# The default sets:
cat <<'DEFAULT_SETS'
-DTILE_M=128 -DTILE_N=128 -DTILE_K=16 -DWPT_M=8 -DWPT_N=8 -DVW=4
-DTILE_M=128 -DTILE_N=128 -DTILE_K=8 -DWPT_M=8 -DWPT_N=8 -DVW=4
-DTILE_M=128 -DTILE_N=128 -DTILE_K=16 -DWPT_M=8 -DWPT_N=8 -DVW=1
-DTILE_M=128 -DTILE_N=64 -DTILE_K=16 -DWPT_M=8 -DWPT_N=8 -DVW=4
-DTILE_M=128 -DTILE_N=64 -DTILE_K=16 -DWPT_M=8 -DWPT_N=4 -DVW=4
-DTILE_M=64 -DTILE_N=64 -DTILE_K=16 -DWPT_M=4 -DWPT_N=4 -DVW=4
-DTILE_M=128 -DTILE_N=128 -DTILE_K=32 -DWPT_M=8 -DWPT_N=8 -DVW=4
DEFAULT_SETS
