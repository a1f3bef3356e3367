#!/usr/bin/env bash
# status.sh JOBID — Snakemake 7's --cluster-status for Slurm: prints running, success or failed.
# Without it Snakemake learns that a job ended only from files the job script leaves, which a job
# that Slurm kills (time limit, node failure, an unwritable --output) never writes. Asks
# slurmctld (it keeps finished jobs for MinJobAge), else the accounting database (sacct).
id=${1%%;*} # sbatch --parsable prints JOBID or JOBID;CLUSTER
state=$(scontrol -o show job "$id" 2>/dev/null | sed -nE 's/.* JobState=([A-Z_]+) .*/\1/p' | head -1)
if [[ -z $state ]]; then
  state=$(sacct -n -X -P -o State -j "$id" 2>/dev/null | head -1)
  state=${state%% *}
fi
case $state in
COMPLETED) echo success ;;
"" | PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | RESIZING | SIGNALING | STAGE_OUT)
  echo running ;;
*) echo failed ;;
esac
