#!/bin/bash
# hosts/mpi/device-pdgesv.sh — on a GPU machine with no registry, from the repository root:
# ScaLAPACK pdgesv with OpenBLAS (the system BLAS there, one thread a rank) against the same with
# libclops_lapack (every rank's dgemm_ on clops, the 16 ranks sharing the GPU), N = 8192 and 16384,
# 16 ranks (4x4), NB = 256 (hosts/bench/RESULTS.md, 2026-11-25).
# It expects, carried in .device/: prelude.sh and debs/ (../shared/device), mpi-debs/ (apt-get download
# of openmpi-bin, libopenmpi3, libscalapack-openmpi2.2, libopenblas0-pthread and their libraries),
# and mpi-run/ (libclops.so.1*, hosts/lapack/libclops_lapack.so.1*, hosts/mpi/pdgesv-* of a build).
. .device/prelude.sh .device/debs
for f in .device/mpi-debs/*.deb; do dpkg -x "$f" /tmp/devroot; done
export OPAL_PREFIX=/tmp/devroot/usr
mkdir -p /tmp/mpibin && ln -sf /tmp/devroot/usr/bin/mpirun.openmpi /tmp/mpibin/mpirun
export PATH=/tmp/mpibin:/tmp/devroot/usr/bin:$PATH
B=$PWD/.device/mpi-run
L=/tmp/devroot/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$B:$B/hosts/lapack:$L/openblas-pthread:$L:$LD_LIBRARY_PATH
export CLOPS_LIBRARY=$B/libclops.so.1 XDG_CACHE_HOME=/tmp/cache OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mpirun --version | head -1
ldd $B/hosts/mpi/pdgesv-system | grep -E "blas|lapack|scalapack|libmpi"
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
args="-x LD_LIBRARY_PATH -x CLOPS_LIBRARY -x XDG_CACHE_HOME -x OCL_ICD_VENDORS -x OPAL_PREFIX -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS --mca pml ob1 --mca btl self,vader --bind-to none"
echo "=== smoke"; bash hosts/mpi/bench-pdgesv.sh --build $B --sizes 1024 --ranks 4 --nb 256 --timeout 60 --mpirun-args "$args" 2>&1 | tail -6
echo "=== issue 13 comparison"; bash hosts/mpi/bench-pdgesv.sh --build $B --sizes "${SIZES:-8192 16384}" --ranks "${RANKS:-16}" --nb 256 --timeout 200 --mpirun-args "$args" 2>&1 | tee $OUT/pdgesv.txt | tail -12
