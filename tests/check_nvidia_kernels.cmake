# ctest: the GEMM kernels for NVIDIA GPUs (kernels/gemm_pipeline.cl joined with gemm_simt.cl,
# gemm_mma_core.cl + gemm_mma.cl, or gemm_mma_core.cl + gemm_tf32.cl, as gemm_kernel.c and
# gemm_tf32.c build them) compile for PTX without a warning, with the tiles of gemm_tune.c's
# tables, in every precision, and with -DCARRY (a slab of K) where the kernel takes it. Only
# NVIDIA's driver builds them in use, and no machine of CI has one: this is where a change to
# them first meets a compiler. clang passes the inline PTX through unchecked (-Dasm=__asm__:
# OpenCL C knows no asm keyword; NVIDIA's compiler takes it); ptxas is not run. A -DCARRY
# build must keep its accumulators in registers as the default build does: at -O3 its PTX may
# store to thread-local memory (st.local) no more often. gemm_simt's carry loops without
# #pragma unroll put the accumulators in local memory (1160 st.local against 0), and its slabs
# ran at ~37 TFLOP/s against ~45 on an H200 (hosts/bench/RESULTS.md, 2026-11-30 20:00).
#   cmake -DCLANG=<clang> -DKERNELS=<kernels/> -DOUT=<a scratch directory> -P this
file(MAKE_DIRECTORY ${OUT})
function(join name)
  set(text "")
  foreach(part IN LISTS ARGN)
    file(READ ${KERNELS}/${part}.cl body)
    string(APPEND text "${body}\n")
  endforeach()
  file(WRITE ${OUT}/${name}.cl "${text}")
endfunction()
join(simt gemm_pipeline gemm_simt)
join(mma gemm_pipeline gemm_mma_core gemm_mma)
join(tf32 gemm_pipeline gemm_mma_core gemm_tf32)
# program|options (gemm_tune.c: simt_tunings, mma_tunings, tf32_tunings, gemm_tf32_packed_tiles)
set(configs
    "simt|-DTILE_M=128 -DTILE_N=128 -DTILE_K=8 -DTHREAD_M=16 -DTHREAD_N=8 -DWARP_TM=4 -DSTAGES=4"
    "simt|-DTILE_M=64 -DTILE_N=64 -DTILE_K=16 -DTHREAD_M=4 -DTHREAD_N=4 -DWARP_TM=4 -DSTAGES=3"
    "mma|-DTILE_M=128 -DTILE_N=64 -DTILE_K=8 -DWARP_M=64 -DWARP_N=32 -DMMA_SHAPE=1684 -DSTAGES=3"
    "mma|-DTILE_M=64 -DTILE_N=64 -DTILE_K=8 -DWARP_M=32 -DWARP_N=32 -DMMA_SHAPE=1684 -DSTAGES=4"
    "mma|-DTILE_M=128 -DTILE_N=64 -DTILE_K=8 -DWARP_M=64 -DWARP_N=32 -DMMA_SHAPE=884 -DSTAGES=3"
    "mma|-DTILE_M=64 -DTILE_N=64 -DTILE_K=8 -DWARP_M=32 -DWARP_N=32 -DMMA_SHAPE=884 -DSTAGES=4"
    "mma|-DTILE_M=128 -DTILE_N=256 -DTILE_K=8 -DWARP_M=64 -DWARP_N=64 -DMMA_SHAPE=1688 -DSTAGES=3 -DTF32_PASSES=3"
    "mma|-DTILE_M=64 -DTILE_N=64 -DTILE_K=16 -DWARP_M=32 -DWARP_N=32 -DMMA_SHAPE=1688 -DSTAGES=3 -DTF32_PASSES=1"
    "tf32|-DTILE_M=128 -DTILE_N=128 -DTILE_K=16 -DWARP_M=64 -DWARP_N=32 -DMMA_SHAPE=1688 -DSTAGES=3 -DTF32_PASSES=1 -DPACKED")
set(built 0)
foreach(config IN LISTS configs)
  string(REGEX REPLACE "\\|.*" "" program "${config}")
  string(REGEX REPLACE "^[^|]*\\|" "" options "${config}")
  separate_arguments(options UNIX_COMMAND "${options}")
  set(carries "")
  if(NOT program STREQUAL "tf32")
    set(carries "-DCARRY")
  endif()
  set(spills_default "")
  foreach(carry "" ${carries})
    execute_process(
      COMMAND ${CLANG} -x cl -cl-std=CL1.2 -target nvptx64-nvidia-cuda -Xclang
              -finclude-default-header -Dasm=__asm__ -Werror -O3 -S -o ${OUT}/${program}.ptx
              ${OUT}/${program}.cl ${options} ${carry}
      RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${program} (${options} ${carry}) does not compile for PTX:\n${err}")
    endif()
    file(STRINGS ${OUT}/${program}.ptx stores REGEX "st\\.local")
    list(LENGTH stores spills)
    if(carry STREQUAL "")
      set(spills_default ${spills})
    elseif(spills GREATER spills_default)
      message(FATAL_ERROR "${program} (${options} -DCARRY) stores to thread-local memory "
                          "${spills} times, the default build ${spills_default}: its "
                          "accumulators left registers (a loop over them not unrolled?)")
    endif()
    math(EXPR built "${built} + 1")
  endforeach()
endforeach()
message(STATUS "the NVIDIA GEMM kernels: ${built} configurations compile for PTX without a warning")
