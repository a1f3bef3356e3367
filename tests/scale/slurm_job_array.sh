#!/usr/bin/env bash
# A job array on a real Slurm (run under `slurm-cluster run`): sbatch --array=0-3 --wait runs each
# task once, with its own SLURM_ARRAY_TASK_ID and the array's count, min and max; when task 2
# exits 1, sbatch --wait fails and task 2, and only it, is recorded FAILED with exit code 1, in
# the job completion log (what sacct -c reads) and by scontrol.
set -euo pipefail
: "${SLURM_CONF:?run under slurm-cluster run}" "${CLOPS_SLURM_DIR:?run under slurm-cluster run}"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

work=$CLOPS_SLURM_DIR/job-array
rm -rf -- "$work"
mkdir -p "$work"
node=$(hostname -s)
jobcomp=$(scontrol show config | awk '$1 == "JobCompLoc" { print $3 }')
[[ -n $jobcomp ]] || fail "scontrol show config names no JobCompLoc"

# Each task writes what Slurm told it, one key=value a line, to its own output file.
cat >"$work/task.sh" <<'EOF'
#!/bin/bash
echo "task_id=$SLURM_ARRAY_TASK_ID"
echo "task_count=$SLURM_ARRAY_TASK_COUNT"
echo "task_min=$SLURM_ARRAY_TASK_MIN"
echo "task_max=$SLURM_ARRAY_TASK_MAX"
echo "array_job_id=$SLURM_ARRAY_JOB_ID"
echo "local_id=$SLURM_LOCALID"
echo "host=$(hostname -s)"
if [[ $SLURM_ARRAY_TASK_ID == "${FAIL_TASK:-none}" ]]; then exit 1; fi
EOF
chmod +x "$work/task.sh"

# submit_array FAIL_TASK — submits tasks 0-3 and waits for them; sets job and submit_status.
submit_array() {
  local out
  submit_status=0
  out=$(timeout 90 sbatch --parsable --array=0-3 --wait --export="ALL,FAIL_TASK=$1" \
    --chdir="$work" --output="$work/%A_%a.out" "$work/task.sh") || submit_status=$?
  ((submit_status != 124)) || fail "sbatch --wait did not return within 90 s"
  job=${out%%;*}
  [[ $job =~ ^[0-9]+$ ]] || fail "sbatch --parsable printed '$out', not a job id"
}

value_in() { # value_in FILE KEY
  sed -n "s/^$2=//p" "$1"
}

check_task_output() { # check_task_output JOB TASK
  local file=$work/$1_$2.out key expected got
  [[ -f $file ]] || fail "task $2 of job $1 wrote no $file"
  for expected in "task_id=$2" task_count=4 task_min=0 task_max=3 "array_job_id=$1" local_id=0 \
    "host=$node"; do
    key=${expected%%=*}
    got=$(value_in "$file" "$key")
    [[ $key=$got == "$expected" ]] || fail "$file: $key=$got, expected $expected"
  done
}

check_outputs() { # check_outputs JOB
  local task count
  for task in 0 1 2 3; do check_task_output "$1" "$task"; done
  count=$(find "$work" -name "$1_*.out" | wc -l)
  ((count == 4)) || fail "job $1 left $count output files, expected 4 (one a task)"
}

# "TASK STATE EXITCODE" a line, sorted by task, from the job completion log: one record a task.
jobcomp_states() {
  local state='JobState=([A-Z_]+)' task='ArrayTaskId=([0-9]+)' code='ExitCode=([0-9]+:[0-9]+)'
  grep -E " ArrayJobId=$1 " "$jobcomp" 2>/dev/null |
    sed -E "s/.* $state .* $task .* $code.*/\2 \1 \3/" | sort -n || true
}

# The same from slurmctld, which keeps finished jobs for MinJobAge seconds.
scontrol_states() {
  local state='JobState=([A-Z_]+)' task='ArrayTaskId=([0-9]+)' code='ExitCode=([0-9]+:[0-9]+)'
  scontrol -o show job "$1" | sed -E "s/.* $task .* $state .* $code.*/\1 \2 \3/" | sort -n
}

# The completion record is written as the task ends; sbatch --wait may see the end first.
wait_for_jobcomp() { # wait_for_jobcomp JOB
  local deadline=$((SECONDS + 10))
  until (($(jobcomp_states "$1" | wc -l) >= 4)); do
    ((SECONDS < deadline)) || break
    sleep 0.2
  done
}

check_states() { # check_states JOB EXPECTED
  local source got
  wait_for_jobcomp "$1"
  for source in jobcomp scontrol; do
    got=$("${source}_states" "$1")
    [[ $got == "$2" ]] || fail "job $1 per task from $source:
$got
expected:
$2"
  done
}

start=$SECONDS

submit_array none
((submit_status == 0)) || fail "sbatch --wait exited $submit_status; all tasks should succeed"
check_outputs "$job"
check_states "$job" "0 COMPLETED 0:0
1 COMPLETED 0:0
2 COMPLETED 0:0
3 COMPLETED 0:0"
echo "job $job: 4 tasks ran once each, with their ids, count 4, min 0, max 3 on $node"

submit_array 2
((submit_status != 0)) || fail "sbatch --wait exited 0 though task 2 of job $job exited 1"
check_outputs "$job"
check_states "$job" "0 COMPLETED 0:0
1 COMPLETED 0:0
2 FAILED 1:0
3 COMPLETED 0:0"
echo "job $job: sbatch --wait exited $submit_status; task 2 FAILED, exit code 1; others COMPLETED"
echo "both arrays in $((SECONDS - start)) s"
