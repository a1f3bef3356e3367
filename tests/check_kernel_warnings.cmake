# ctest: gemm.cl's CPU variants (gemm_tune.c's tiles for a CPU: 64x128x8 of 16x16, 16-wide
# vectors; with and without -DCARRY, a slab of K) compile without a warning for x86-64 CPUs with and without AVX-512, f32 and f64, as
# PoCL's clang compiles them; a warning there reaches the host's stderr ("2 warnings
# generated.", issue 25 item 4), which no ctest on an AVX-512 machine could otherwise see.
#   cmake -DCLANG=<clang> -DKERNEL=<kernels/gemm.cl> -P this
foreach(arch x86-64 x86-64-v3 x86-64-v4)
  foreach(real "float" "double;-DUSE_FP64" "float;-DCARRY" "double;-DUSE_FP64;-DCARRY")
    execute_process(
      COMMAND ${CLANG} -x cl -cl-std=CL1.2 -target x86_64-unknown-linux-gnu -march=${arch}
              -Xclang -finclude-default-header -Werror -c -o /dev/null ${KERNEL}
              -DREAL=${real} -DTILE_M=64 -DTILE_N=128 -DTILE_K=8 -DWPT_M=16 -DWPT_N=16 -DVW=16
              -DCLOPS_NO_REQD_WG
      RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "gemm.cl (${real}, -march=${arch}) does not compile cleanly:\n${err}")
    endif()
  endforeach()
endforeach()
message(STATUS "gemm.cl's CPU variants (and -DCARRY): no warning on x86-64, x86-64-v3 and x86-64-v4")
