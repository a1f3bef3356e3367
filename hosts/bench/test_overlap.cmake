# test_overlap.cmake — ctest's smoke run of `clops-bench overlap` at tiny sizes on the default
# pool (PoCL in CI): it must exit 0 and print both tables, a row per size (pageable and registered A, B) and per submit case,
# none of them FAILED. The figures are not judged (a CPU device gains little from two streams).
#
#   cmake -DBENCH=<clops-bench> -P hosts/bench/test_overlap.cmake
cmake_minimum_required(VERSION 3.18)

execute_process(
  COMMAND ${BENCH} overlap --sizes 67,130 --calls 3 --reps 2 --submit-calls 200
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "clops-bench overlap exited '${status}', not 0")
endif()

set(number "[0-9]+\\.[0-9]+")
set(patterns
  "Target \\(issue 23\\): speedup >= 1\\.5 at N = 4096"
  "\n *N +calls +A, B memory +register ms +sequential ms +two streams ms +speedup +max rel diff\n-+\n"
  "\n *67 +3 +pageable +- +${number} +${number} +${number} +[0-9]\\.[0-9]e[-+][0-9]+\n"
  "\n *67 +3 +registered +${number} +${number} +${number} +${number} +[0-9]\\.[0-9]e[-+][0-9]+\n"
  "\n *130 +3 +pageable +- +${number} +${number} +${number} +[0-9]\\.[0-9]e[-+][0-9]+\n"
  "\n *130 +3 +registered +${number} +${number} +${number} +${number} +[0-9]\\.[0-9]e[-+][0-9]+\n"
  "\ncall +submits +median us +p90 us +target us\n-+\n"
  "\ngemm refused by its checks \\(K 16 vs 17\\) +200 +${number} +${number} +<= 10\n"
  "\ngemm 16 x 16 f32, host operands: submit +200 +${number} +${number} +<= 10\n"
  "\nthe same gemm, the whole synchronous call +200 +${number} +${number} +-\n")
foreach(pattern IN LISTS patterns)
  if(NOT "${out}" MATCHES "${pattern}")
    message(FATAL_ERROR "clops-bench overlap's output lacks a line matching '${pattern}'")
  endif()
endforeach()
if("${out}" MATCHES "FAILED")
  message(FATAL_ERROR "clops-bench overlap printed a FAILED row")
endif()
