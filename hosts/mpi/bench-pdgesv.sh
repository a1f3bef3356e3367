#!/usr/bin/env bash
# hosts/mpi/bench-pdgesv.sh — ScaLAPACK's pdgesv with the system BLAS against the same with
# libclops_lapack (every rank's dgemm_ on clops, the ranks sharing the node's GPU), one table
# row per (N, ranks, BLAS). Runs the build's pdgesv-system and pdgesv-clops under mpirun; each
# checks its scaled residual against LAPACK's threshold of 30 (hosts/mpi/README.md).
#
#   hosts/mpi/bench-pdgesv.sh [--build DIR] [--sizes "8192 16384"] [--ranks "4 16"] [--nb 256]
#                             [--blas "system clops"] [--timeout SECONDS] [--mpirun-args "..."]
#
# Defaults are the issue's comparison on a 16-core GPU machine. The grid is the squarest P×Q
# with P <= Q (4 ranks: 2×2, 16: 4×4). Exit status: 0 when every run passed, 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
sizes="8192 16384"
ranks_list="4 16"
nb=256
blas_list="system clops"
limit=0
mpirun_args=""
while (($#)); do
  case $1 in
    --build) build=$2 ;;
    --sizes) sizes=$2 ;;
    --ranks) ranks_list=$2 ;;
    --nb) nb=$2 ;;
    --blas) blas_list=$2 ;;
    --timeout) limit=$2 ;;
    --mpirun-args) mpirun_args=$2 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-pdgesv: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
  esac
  shift 2
done
build=$(cd "$build" && pwd)
for program in pdgesv-system pdgesv-clops; do
  if [[ ! -x $build/hosts/mpi/$program ]]; then
    echo "bench-pdgesv: $build/hosts/mpi/$program not built (needs MPI and ScaLAPACK)" >&2
    exit 2
  fi
done

# The ranks' environment: this build's libclops, and one BLAS thread per rank (OpenBLAS or a
# threaded BLAS behind the alternatives would otherwise start a thread per core in every rank).
export CLOPS_LIBRARY=$build/libclops.so.1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
mpirun=(mpirun)
if mpirun --version 2>/dev/null | grep -q "Open MPI"; then
  # Root needs --allow-run-as-root; more ranks than cores need --oversubscribe.
  mpirun+=(--oversubscribe)
  [[ $(id -u) == 0 ]] && mpirun+=(--allow-run-as-root)
fi
# shellcheck disable=SC2206 # the extra arguments are words
mpirun+=($mpirun_args)
timeout_cmd=()
((limit > 0)) && timeout_cmd=(timeout "$limit")

# The system BLAS the program loads: the alternatives' target (blas/ is the reference BLAS,
# openblas-pthread/ OpenBLAS, ...), as its last two path components.
system_blas=$(ldd "$build/hosts/mpi/pdgesv-system" | awk '/libblas\.so/ { print $3; exit }')
system_blas=$(readlink -f "$system_blas")
system_blas=$(basename "$(dirname "$system_blas")")/$(basename "$system_blas")

log=$(mktemp)
trap 'rm -f "$log"' EXIT
printf '%-7s %-6s %-6s %-5s %-10s %-9s %-11s %s\n' N ranks grid NB time_s GFLOP/s residual BLAS
failed=0
for n in $sizes; do
  for ranks in $ranks_list; do
    for blas in $blas_list; do
      case $blas in
        system) program=pdgesv-system ;;
        clops) program=pdgesv-clops ;;
        *) echo "bench-pdgesv: --blas takes system and clops, not '$blas'" >&2; exit 2 ;;
      esac
      rc=0
      "${timeout_cmd[@]}" "${mpirun[@]}" -np "$ranks" "$build/hosts/mpi/$program" -n "$n" \
        --nb "$nb" >"$log" 2>&1 || rc=$?
      result=$(grep '^RESULT ' "$log" || true)
      if [[ -z $result ]]; then
        printf '%-7s %-6s %-6s %-5s failed (exit %s): %s\n' "$n" "$ranks" - "$nb" "$rc" \
          "$(tail -n 3 "$log" | tr '\n' ' ')"
        failed=1
        continue
      fi
      # RESULT n=... nb=... grid=PxQ ranks=... time_s=... gflops=... residual=... dgemm=...
      declare -A r=()
      for field in ${result#RESULT }; do r[${field%%=*}]=${field#*=}; done
      if [[ $blas == system ]]; then
        label="system ($system_blas)"
      else
        label="clops (${r[clops_calls]}/${r[dgemm_calls]} dgemm_)"
      fi
      ((rc == 0)) || { label="$label FAILED (exit $rc)"; failed=1; }
      printf '%-7s %-6s %-6s %-5s %-10s %-9s %-11s %s\n' "${r[n]}" "${r[ranks]}" "${r[grid]}" \
        "${r[nb]}" "${r[time_s]}" "${r[gflops]}" "${r[residual]}" "$label"
      unset r
    done
  done
done
exit $failed
