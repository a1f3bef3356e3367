#!/usr/bin/env bash
# mpi_shards.sh CLOPS CHECK_OUTPUTS CFG WORK MPIRUN... — `MPIRUN clops run --shard auto` (two
# ranks): each rank runs its shard from the launcher's variables (clops links no MPI), the
# manifests say so (source mpi, K = rank, N = 2, the local rank, runs K, K + 2, ...), every frame
# of zoom_shards.cfg equals the host's reference, and clops gather finds the set complete.
set -euo pipefail
clops=$1 check_outputs=$2 cfg=$3 work=$4
shift 4

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

rm -rf -- "$work"
mkdir -p "$work"
out=$work/out
timeout -k 10 240 "$@" "$clops" run --quiet --shard auto --output-dir "$out" "$cfg" >"$work/mpirun.log" 2>&1 ||
  fail "mpirun exited $?: $(cat "$work/mpirun.log")"
for k in 0 1; do
  got=$(python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))
print(m["shard"]["source"], m["shard"]["index"], m["shard"]["count"], m["local_rank"],
      [r["index"] for r in m["runs"]], m["status"], m["device"]["choice"] in ("gpu", "default"))' \
    "$out/.clops/shard-$k-of-2.json") || fail "no manifest of shard $k of 2"
  expected="mpi $k 2 $k $(python3 -c "print(list(range($k, 6, 2)))") ok True"
  [[ $got == "$expected" ]] || fail "shard $k's manifest: $got, expected $expected"
done
args=()
for scale in 0.4 0.1 0.025 0.00625 0.0016 0.0004; do
  args+=(-- png "$out/zoom/view-scale=$scale.png" -0.743643 0.131825 "$scale" 512 f64 60 80)
done
"$check_outputs" "${args[@]:1}" || fail "a frame differs from the reference"
text=$("$clops" gather "$out") || fail "clops gather exited $?: $text"
[[ $text == *"Complete: 2 of 2 shards ok, 6 runs, 6 files"* ]] || fail "gather: $text"
echo "PASS: 2 MPI ranks, 2 shards, 6 frames equal to the reference; gather: complete"
