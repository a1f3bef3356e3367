#!/usr/bin/env bash
# run_workflow.sh CLOPS CHECK_OUTPUTS PIPELINE WORK [PROFILE] — the ctests of this directory:
# Debian's snakemake runs the Snakefile over PIPELINE (hosts/cli/tests/zoom_shards.cfg: 6 runs)
# in 3 shards in WORK, locally with --cores 2 or, with PROFILE, through the Slurm profile (under
# `slurm-cluster run`); then every shard's manifest is in place, every frame equals the host
# reference, gather.json says the set is complete, and a second snakemake has nothing to do.
# HOME and the XDG directories are WORK's, so that snakemake writes nowhere else.
set -euo pipefail
clops=$1 check_outputs=$2 pipeline=$3 work=$4 profile=${5:-}
here=$(cd "$(dirname "$0")" && pwd)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

rm -rf -- "$work"
mkdir -p "$work/home"
export HOME=$work/home XDG_CACHE_HOME=$work/home/.cache XDG_CONFIG_HOME=$work/home/.config \
  XDG_DATA_HOME=$work/home/.local/share
command -v snakemake >/dev/null || fail "snakemake is not installed (Debian: apt-get install snakemake)"
args=(-s "$here/Snakefile" --directory "$work/run"
  --config "clops=$clops" "pipeline=$pipeline" shards=3 out=zoom)
if [[ -n $profile ]]; then
  args+=(--profile "$profile")
else
  args+=(--cores 2)
fi
timeout -k 10 150 snakemake "${args[@]}" >"$work/snakemake.log" 2>&1 ||
  fail "snakemake exited $?: $(tail -40 "$work/snakemake.log")"
out=$work/run/zoom
for k in 0 1 2; do
  [[ -f $out/.clops/shard-$k-of-3.json ]] || fail "no manifest of shard $k"
done
got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["schema"], d["complete"], d["shard_count"], d["run_count"], d["runs"], d["files"],
      d["failures"], [s["status"] for s in d["shards"]])' "$out/gather.json") ||
  fail "gather.json is not a gather document"
expected="clops-gather/1 True 3 6 6 6 0 ['ok', 'ok', 'ok']"
[[ $got == "$expected" ]] || fail "gather.json: $got, expected $expected"
frames=()
for scale in 0.4 0.1 0.025 0.00625 0.0016 0.0004; do
  frames+=(-- png "$out/zoom/view-scale=$scale.png" -0.743643 0.131825 "$scale" 512 f64 60 80)
done
"$check_outputs" "${frames[@]:1}" || fail "a frame differs from the reference"
if [[ -n $profile ]]; then
  jobs=$(grep -c "Submitted batch job\|Submitted job" "$work/snakemake.log" || true)
  ((jobs == 4)) || fail "snakemake submitted $jobs jobs to Slurm, not 4 (3 shards, gather)"
fi
snakemake "${args[@]}" --dry-run >"$work/again.log" 2>&1 || fail "snakemake --dry-run failed"
grep -q "Nothing to be done" "$work/again.log" || fail "a second run has work: $(cat "$work/again.log")"
echo "PASS: 3 shard jobs and gather; 6 frames equal to the reference; the set complete"
