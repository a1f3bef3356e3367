#!/usr/bin/env bash
# slurm-cluster stop leaves nothing of the cluster: its daemons (by the pids their pid files held),
# its jobs' processes and slurmstepd, its ports, its sockets, also after slurmctld was killed;
# start replaces a cluster still running in its directory, and ignores stale pid files that name
# someone else's process.
#
#   slurm_cluster_stop.sh SLURM_CLUSTER BASE — clusters in BASE/s and in a directory under BASE
#   too long for unix sockets (so they go to /tmp).
set -euo pipefail
(($# == 2)) || { echo "usage: $0 SLURM_CLUSTER BASE" >&2; exit 2; }
harness=$1
base=$(realpath -m -- "$2")
long_dir=$base/a-path-longer-than-unix-sockets-allow/so-that-the-sockets-of-munged-and-slurmstepd
long_dir+=/go-to-a-directory-under-tmp
short_dir=$base/s
bystander=
marker=CLOPS_SLURM_CLUSTER_DAEMON # what slurm-cluster puts in its daemons' environment

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cleanup() {
  if [[ -n $bystander ]]; then kill "$bystander" 2>/dev/null || true; fi
  bash "$harness" stop "$long_dir" || true
  bash "$harness" stop "$short_dir" || true
}
trap cleanup EXIT

alive() {
  local stat state
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  state=${stat##*) } # after the name, which may hold spaces and parentheses
  state=${state%% *}
  [[ $state != Z && $state != X ]]
}

start() { # start DIR — and check that it printed the environment to use
  local printed
  printed=$(bash "$harness" start "$1") || fail "slurm-cluster start $1 failed"
  [[ $printed == "export SLURM_CONF=$1/slurm.conf" ]] || fail "start printed '$printed'"
}

daemon_pids() { # daemon_pids DIR — munged, slurmctld, slurmd from their pid files
  local file
  for file in "$1/munge/munged.pid" "$1/slurm/slurmctld.pid" "$1/slurm/slurmd.pid"; do
    [[ -s $file ]] || fail "no pid file $file"
    cat "$file"
  done
}

ports() { # ports DIR — slurmctld's and slurmd's, from slurm.conf
  sed -n 's/^\(SlurmctldPort\|SlurmdPort\)=//p' "$1/slurm.conf"
}

listening() { [[ -n $(ss -Hltn "sport = :$1") ]]; }

check_running() { # check_running DIR PID...
  local dir=$1 pid port
  shift
  for pid in "$@"; do alive "$pid" || fail "daemon $pid of $dir is not running"; done
  for port in $(ports "$dir"); do
    listening "$port" || fail "nothing listens on $port for $dir"
  done
  [[ $(SLURM_CONF=$dir/slurm.conf sinfo -h -o %T) == idle ]] || fail "$dir's node is not idle"
}

# Any process that still names DIR's files or carries its daemons' mark.
processes_of() {
  local entry pid
  for entry in /proc/[0-9]*; do
    pid=${entry#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    alive "$pid" || continue
    if { tr '\0' '\n' <"$entry/cmdline"; } 2>/dev/null | grep -qF "$1/" ||
      { tr '\0' '\n' <"$entry/environ"; } 2>/dev/null | grep -qxF "$marker=$1"; then
      echo "$pid $(tr '\0' ' ' <"$entry/cmdline" 2>/dev/null)"
    fi
  done
}

check_stopped() { # check_stopped DIR PORTS PID...
  local dir=$1 ports=$2 pid port left file
  shift 2
  for pid in "$@"; do ! alive "$pid" || fail "pid $pid of $dir still runs after stop"; done
  for port in $ports; do ! listening "$port" || fail "port $port of $dir still listened on"; done
  left=$(processes_of "$dir")
  [[ -z $left ]] || fail "processes of $dir left after stop:
$left"
  for file in "$dir/munge/munged.pid" "$dir/slurm/slurmctld.pid" "$dir/slurm/slurmd.pid" \
    "$dir/sock"; do
    [[ ! -e $file && ! -L $file ]] || fail "$file left after stop"
  done
}

# submit_sleeper DIR — a job that sleeps; prints the sleep's pid and its slurmstepd's once running
submit_sleeper() {
  local dir=$1 deadline=$((SECONDS + 30)) pid
  rm -f "$dir/sleeper.pid"
  # The pid file appears whole: written aside, then renamed.
  SLURM_CONF=$dir/slurm.conf sbatch -Q --output=/dev/null --chdir="$dir" \
    --wrap 'echo $$ >sleeper.pid.tmp && mv sleeper.pid.tmp sleeper.pid && exec sleep 600' ||
    fail "sbatch failed on $dir"
  until [[ -s $dir/sleeper.pid ]]; do
    ((SECONDS < deadline)) || fail "the sleeping job on $dir did not start within 30 s"
    sleep 0.2
  done
  pid=$(cat "$dir/sleeper.pid")
  alive "$pid" || fail "the sleeping job's process $pid is not running"
  echo "$pid $(awk '{ print $4 }' "/proc/$pid/stat")"
}

begin=$SECONDS

# 1. Sockets in /tmp, started twice in a row, stopped with a job running, stopped again.
start "$long_dir"
[[ -L $long_dir/sock && $(readlink "$long_dir/sock") == /tmp/clops-slurm.* ]] ||
  fail "$long_dir/sock is not a link to a directory under /tmp"
sock_tmp=$(readlink "$long_dir/sock")
mapfile -t first < <(daemon_pids "$long_dir")
first_ports=$(ports "$long_dir")
check_running "$long_dir" "${first[@]}"

start "$long_dir"
mapfile -t second < <(daemon_pids "$long_dir")
survivors=$(for pid in "${first[@]}"; do alive "$pid" && echo "$pid"; done || true)
[[ -z $survivors ]] || fail "a second start left the first's daemons running: $survivors"
for port in $first_ports; do
  [[ " $(ports "$long_dir" | tr '\n' ' ') " == *" $port "* ]] || ! listening "$port" ||
    fail "the first cluster's port $port is still listened on"
done
[[ ! -e $sock_tmp ]] || fail "the first cluster's socket directory $sock_tmp is left"
check_running "$long_dir" "${second[@]}"
sock_tmp=$(readlink "$long_dir/sock")

read -r sleeper stepd < <(submit_sleeper "$long_dir")
second_ports=$(ports "$long_dir")
bash "$harness" stop "$long_dir" || fail "stop failed"
check_stopped "$long_dir" "$second_ports" "${second[@]}" "$sleeper" "$stepd"
[[ ! -e $sock_tmp ]] || fail "socket directory $sock_tmp left after stop"
bash "$harness" stop "$long_dir" || fail "a second stop failed"
echo "long directory: start twice, stop with a running job, stop again: nothing left"

# 2. Stale pid files naming a process that is not the cluster's: start leaves it alone.
mkdir -p "$short_dir/munge" "$short_dir/slurm"
sleep 300 &
bystander=$!
for file in "$short_dir/munge/munged.pid" "$short_dir/slurm/slurmctld.pid" \
  "$short_dir/slurm/slurmd.pid"; do
  echo "$bystander" >"$file"
done
start "$short_dir"
alive "$bystander" || fail "start killed process $bystander that a stale pid file named"
kill "$bystander"
bystander=
marker=CLOPS_SLURM_CLUSTER_DAEMON # what slurm-cluster puts in its daemons' environment
mapfile -t third < <(daemon_pids "$short_dir")
[[ -d $short_dir/sock && ! -L $short_dir/sock ]] || fail "$short_dir/sock is not a directory"
check_running "$short_dir" "${third[@]}"

# 3. slurmctld killed with a job running: stop still ends slurmd, slurmstepd, the job, munged.
read -r sleeper stepd < <(submit_sleeper "$short_dir")
third_ports=$(ports "$short_dir")
kill -KILL "${third[1]}"
bash "$harness" stop "$short_dir" || fail "stop after slurmctld was killed failed"
check_stopped "$short_dir" "$third_ports" "${third[@]}" "$sleeper" "$stepd"
echo "stale pid files ignored; slurmctld killed with a job running: stop left nothing"
echo "all in $((SECONDS - begin)) s"
