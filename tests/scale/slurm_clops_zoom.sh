#!/usr/bin/env bash
# `clops slurm` and `clops gather` on a real Slurm (run under `slurm-cluster run`), with
# hosts/cli/tests/zoom_shards.cfg (6 views of a Mandelbrot zoom) in a job array of 4 tasks.
#   slurm_clops_zoom.sh render CLOPS CHECK_OUTPUTS
#     the script clops slurm prints (its #SBATCH lines, absolute paths) runs under sbatch
#     --wait: every task writes its shard's frames and manifest, from SLURM_ARRAY_TASK_ID;
#     every frame equals the host's reference; clops gather finds the set complete (exit 0).
#   slurm_clops_zoom.sh resume CLOPS CHECK_OUTPUTS
#     clops slurm --submit (with sbatch's --wait passed through) prints the job id; one frame
#     is deleted afterwards: gather names its shard and exits 1; the same script submitted
#     again recomputes that shard alone (the others' logs say they were skipped, their
#     manifests are untouched), and gather passes.
#   slurm_clops_zoom.sh killed CLOPS CHECK_OUTPUTS
#     the array is submitted held, task 2 is cancelled (killed before it ran) and the rest
#     released: gather names shard 2 as missing and exits 1; the same script submitted again
#     runs shard 2 alone (the others are skipped), every frame equals the reference, and gather
#     finds the set complete.
set -euo pipefail
: "${SLURM_CONF:?run under slurm-cluster run}" "${CLOPS_SLURM_DIR:?run under slurm-cluster run}"
: "${CLOPS_SOURCE_DIR:?set by ctest}"
mode=$1 clops=$2 check_outputs=$3

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

work=$CLOPS_SLURM_DIR/clops-$mode
# A blank and a '%' in the output directory: sbatch must read the quoted #SBATCH --output as one
# path, and Slurm's filename pattern must take "%%" for the '%' (issue 22, D5).
out="$work/out dir 100%x"
cfg=$CLOPS_SOURCE_DIR/hosts/cli/tests/zoom_shards.cfg
scales=(0.4 0.1 0.025 0.00625 0.0016 0.0004)
rm -rf -- "$work"
mkdir -p "$work"
# The tasks inherit the environment (sbatch --export=ALL): one kernel cache, shared by the four
# tasks that fill it at once.
export XDG_CACHE_HOME=$work/cache

check_frames() { # every frame against the scalar reference, 60 x 80, 512 iterations, f64
  local args=() scale
  for scale in "${scales[@]}"; do
    args+=(png "$out/zoom/view-scale=$scale.png" -0.743643 0.131825 "$scale" 512 f64 60 80 --)
  done
  "$check_outputs" "${args[@]:0:${#args[@]}-1}" || fail "a frame differs from the reference"
}

gather_complete() {
  local text
  text=$("$clops" gather "$out") || fail "clops gather exited $?: $text"
  [[ $text == *"Complete: 4 of 4 shards ok, 6 runs, 6 files"* ]] || fail "gather: $text"
}

manifest_field() { # manifest_field K EXPR: a Python expression of the manifest m
  python3 -c "import json, sys; m = json.load(open(sys.argv[1])); print($2)" \
    "$out/.clops/shard-$1-of-4.json"
}

if [[ $mode == render ]]; then
  "$clops" slurm "$cfg" --tasks 4 --output-dir "$out" --chdir="$work" >"$work/zoom.sbatch" ||
    fail "clops slurm exited $?"
  for line in "#SBATCH --array=0-3" "#SBATCH --output=\"${out//%/%%}/.clops/slurm-%A_%a.out\"" \
    "#SBATCH --chdir=\"$work\"" "exec '$(realpath "$clops")' run --shard auto --quiet --output-dir '$out' '$cfg'"; do
    grep -qxF -- "$line" "$work/zoom.sbatch" || fail "the script lacks the line '$line'"
  done
  [[ -d $out/.clops ]] || fail "clops slurm did not make $out/.clops for the logs"
  job=$(timeout -k 10 100 sbatch --parsable --wait "$work/zoom.sbatch") || fail "sbatch --wait: $?"
  job=${job%%;*}
  for task in 0 1 2 3; do
    log=$out/.clops/slurm-${job}_$task.out
    [[ -f $log ]] || fail "task $task wrote no log $log"
    got=$(manifest_field $task '(m["shard"]["source"], m["shard"]["index"], m["local_rank"], [r["index"] for r in m["runs"]], m["status"])')
    expected="('slurm', $task, 0, $(python3 -c "print(list(range($task, 6, 4)))"), 'ok')"
    [[ $got == "$expected" ]] || fail "shard $task's manifest: $got, expected $expected"
  done
  check_frames
  gather_complete
  echo "PASS: 4 array tasks rendered 6 frames equal to the reference; gather: complete"
  exit 0
fi

# The second submission of a script: shard `redo` runs, the others skip; then the set is whole.
resubmit_redoes_only() { # resubmit_redoes_only SCRIPT REDO
  local again task log
  again=$(timeout -k 10 100 sbatch --parsable --wait "$1") || fail "the second sbatch --wait: $?"
  again=${again%%;*}
  for task in 0 1 2 3; do
    log=$out/.clops/slurm-${again}_$task.out
    [[ -f $log ]] || fail "task $task of the second job wrote no log"
    if ((task == $2)); then
      grep -q "skipped" "$log" && fail "shard $task was skipped: $(cat "$log")"
    else
      grep -q "Shard $task/4 of .* is done .*; skipped" "$log" ||
        fail "shard $task was not skipped: $(cat "$log")"
    fi
  done
  check_frames
  gather_complete
  echo "PASS: shard $2 alone ran again (job $again); gather: complete"
}

if [[ $mode == killed ]]; then
  "$clops" slurm "$cfg" --tasks 4 --output-dir "$out" >"$work/zoom.sbatch" ||
    fail "clops slurm exited $?"
  job=$(sbatch --parsable --hold "$work/zoom.sbatch") || fail "sbatch --hold: $?"
  job=${job%%;*}
  scancel "${job}_2" || fail "scancel ${job}_2: $?"
  scontrol release "$job" || fail "scontrol release $job: $?"
  for ((i = 0; i < 90; i++)); do
    [[ -z $(squeue -h -j "$job" 2>/dev/null) ]] && break
    sleep 1
  done
  [[ -z $(squeue -h -j "$job" 2>/dev/null) ]] || fail "job $job still queued after 90 s"
  [[ ! -e $out/.clops/shard-2-of-4.json ]] || fail "the cancelled task 2 left a manifest"
  status=0
  text=$("$clops" gather "$out" 2>&1) || status=$?
  ((status == 1)) || fail "gather with shard 2 killed exited $status, not 1: $text"
  [[ $text == *"shard 2/4: missing"* ]] || fail "gather does not name shard 2 as missing: $text"
  resubmit_redoes_only "$work/zoom.sbatch" 2
  exit 0
fi

[[ $mode == resume ]] || fail "mode render, resume or killed, not '$mode'"
job=$(timeout -k 10 100 "$clops" slurm "$cfg" --tasks 4 --output-dir "$out" --wait --submit) ||
  fail "clops slurm --submit exited $?"
[[ $job =~ ^[0-9]+$ ]] || fail "clops slurm --submit printed '$job', not a job id"
script=$out/.clops/clops-zoom_shards.sbatch
[[ -f $script ]] || fail "clops slurm --submit left no $script"
check_frames
gather_complete

# Shard 2 (run 2, scale 0.025) loses its frame.
rm -- "$out/zoom/view-scale=0.025.png"
declare -A before
for task in 0 1 3; do before[$task]=$(sha256sum <"$out/.clops/shard-$task-of-4.json"); done
status=0
text=$("$clops" gather "$out" 2>&1) || status=$?
((status == 1)) || fail "gather with a frame missing exited $status, not 1: $text"
[[ $text == *"shard 2/4: $out/zoom/view-scale=0.025.png: missing"* ]] ||
  fail "gather does not name shard 2's missing frame: $text"

# The same array again: shard 2 alone runs.
again=$(timeout -k 10 100 sbatch --parsable --wait "$script") || fail "the second sbatch --wait: $?"
again=${again%%;*}
for task in 0 1 2 3; do
  log=$out/.clops/slurm-${again}_$task.out
  [[ -f $log ]] || fail "task $task of the second job wrote no log"
  if ((task == 2)); then
    grep -q "skipped" "$log" && fail "shard 2 was skipped: $(cat "$log")"
    grep -q "shard 2/4 runs again: .*view-scale=0.025.png: missing" "$log" ||
      fail "shard 2 does not say why it runs again: $(cat "$log")"
  else
    grep -q "Shard $task/4 of .* is done .*; skipped" "$log" ||
      fail "shard $task was not skipped: $(cat "$log")"
    [[ $(sha256sum <"$out/.clops/shard-$task-of-4.json") == "${before[$task]}" ]] ||
      fail "shard $task's manifest changed"
  fi
done
check_frames
gather_complete
echo "PASS: the damaged shard alone ran again (job $again); gather: complete"
