#!/bin/sh
# hosts/bench/tune-gemm.sh BUILD_DIR SIZES [SETS_FILE] — times clops-bench's GEMM with each tile set below,
# forced through the gemm settings (operators.gemm.tile_m ...), to choose the tuning table's entry for a device.
# Run it where the device is (see device-run.sh for the GPU machine); prints one table per set.
# SETS_FILE holds one tile set per line (default: the sets below).
set -u
build=$1
sizes=$2
sets=${3:-}
while read -r tiles; do
    [ -z "$tiles" ] && continue
    cfg=$(mktemp --suffix=.cfg)
    printf 'operators = { gemm = { %s }; };\n' "$tiles" >"$cfg"
    echo "== $tiles"
    "$build/hosts/bench/clops-bench" --sizes "$sizes" --reps 3 --no-cold --config "$cfg" 2>&1 |
        grep -E '^(f32|f64) '
    rm -f "$cfg"
done <<SETS
$(if [ -n "$sets" ]; then cat "$sets"; else sed -n '/^tile_m/p' "$0"; fi)
SETS
exit 0
# The default sets:
cat <<'DEFAULT_SETS'
tile_m = 128; tile_n = 128; tile_k = 16; wpt_m = 8; wpt_n = 8; vw = 4;
tile_m = 128; tile_n = 128; tile_k = 8; wpt_m = 8; wpt_n = 8; vw = 4;
tile_m = 128; tile_n = 128; tile_k = 16; wpt_m = 8; wpt_n = 8; vw = 1;
tile_m = 128; tile_n = 64; tile_k = 16; wpt_m = 8; wpt_n = 8; vw = 4;
tile_m = 128; tile_n = 64; tile_k = 16; wpt_m = 8; wpt_n = 4; vw = 4;
tile_m = 64; tile_n = 64; tile_k = 16; wpt_m = 4; wpt_n = 4; vw = 4;
tile_m = 128; tile_n = 128; tile_k = 32; wpt_m = 8; wpt_n = 8; vw = 4;
DEFAULT_SETS
