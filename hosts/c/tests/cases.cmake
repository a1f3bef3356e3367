# The clops-call tests, one CASE per ctest test: each runs clops-call (CALL) and asserts the
# numbers it wrote back or printed, with rawcheck (CHECK) where a file holds them. WORK is a
# scratch directory of the case.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Runs the command in ARGN and fails the test unless it exits with `rc` and its stdout+stderr
# match `regex`; the output is left in ${WORK}/out.txt.
function(run rc regex)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE got
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(WRITE ${WORK}/out.txt "${out}")
  message(STATUS "${ARGN}\n  -> exit ${got}\n${out}${err}")
  if(NOT got STREQUAL "${rc}")
    message(FATAL_ERROR "exit code ${got}, expected ${rc}")
  endif()
  if(NOT "${out}${err}" MATCHES "${regex}")
    message(FATAL_ERROR "output does not match '${regex}'")
  endif()
endfunction()

# A (3x4), B (4x2) and A^T: 2 A B = [24 2; 56 10; 88 18].
set(A 1 2 3 4 5 6 7 8 9 10 11 12)
set(AT 1 5 9 2 6 10 3 7 11 4 8 12)
set(B 1 0 0 1 1 1 2 -1)
set(gemm_args gemm b=@B.bin:f64:4x2 c=@C.bin:f64:3x2)

if(CASE STREQUAL "gemm_file_inputs_written_back")
  # C = 2 A B + C from files: C is written back, A and B are left as they were.
  run(0 "" ${CHECK} write A.bin f64 ${A})
  run(0 "" ${CHECK} write B.bin f64 ${B})
  run(0 "" ${CHECK} write C.bin f64 1 1 1 1 1 1)
  run(0 "" ${CALL} gemm a=@A.bin:f64:3x4 b=@B.bin:f64:4x2 c=@C.bin:f64:3x2 alpha=2 beta=1)
  run(0 "as expected" ${CHECK} expect C.bin f64 1e-12 25 3 57 11 89 19)
  run(0 "as expected" ${CHECK} expect A.bin f64 0 ${A})
  run(0 "as expected" ${CHECK} expect B.bin f64 0 ${B})
elseif(CASE STREQUAL "gemm_f32_transposed_file")
  # op(A) = (A^T)^T through trans_a; beta = 0 must not read the NaNs in C.
  run(0 "" ${CHECK} write AT.bin f32 ${AT})
  run(0 "" ${CHECK} write B.bin f32 ${B})
  run(0 "" ${CHECK} write C.bin f32 nan nan nan nan nan nan)
  run(0 "c = f32 3x2 *\n 24 2\n 56 10\n 88 18\n"
      ${CALL} --print c gemm a=@AT.bin:f32:4x3 trans_a=transpose b=@B.bin:f32:4x2
      c=@C.bin:f32:3x2 alpha=2)
  run(0 "as expected" ${CHECK} expect C.bin f32 1e-5 24 2 56 10 88 18)
elseif(CASE STREQUAL "gemm_random_inputs_printed")
  # Generated inputs at awkward sizes: the printed c must be 1.5 a b of the printed a and b.
  run(0 "a = f64 7x5.*b = f64 5x3.*c = f64 7x3"
      ${CALL} gemm a=random:f64:7x5:seed=11 b=random:f64:5x3:seed=12 c=zeros:f64:7x3
      alpha=1.5 --print a --print b --print c)
  run(0 "max" ${CHECK} gemm-printed ${WORK}/out.txt 1.5 1e-13)
  # The same seed gives the same tensor; another seed, another one.
  run(0 "" ${CALL} --print a gemm a=random:f64:7x5:seed=11 b=zeros:f64:5x3 c=zeros:f64:7x3)
  file(READ ${WORK}/out.txt first)
  run(0 "" ${CALL} --print a gemm a=random:f64:7x5:seed=11 b=zeros:f64:5x3 c=zeros:f64:7x3)
  file(READ ${WORK}/out.txt second)
  run(0 "" ${CALL} --print a gemm a=random:f64:7x5:seed=12 b=zeros:f64:5x3 c=zeros:f64:7x3)
  file(READ ${WORK}/out.txt third)
  if(NOT first STREQUAL second OR first STREQUAL third)
    message(FATAL_ERROR "random tensors do not follow their seeds")
  endif()
elseif(CASE STREQUAL "bad_argument_name_fails")
  # The library rejects the name and lists the parameters; the output file is not touched.
  run(0 "" ${CHECK} write B.bin f64 ${B})
  run(0 "" ${CHECK} write C.bin f64 1 1 1 1 1 1)
  run(1 "CLOPS_ERR_NOT_FOUND: gemm: no parameter named 'gamma' \\(parameters: a, b, c,"
      ${CALL} ${gemm_args} a=zeros:f64:3x4 gamma=2)
  run(0 "as expected" ${CHECK} expect C.bin f64 0 1 1 1 1 1 1)
elseif(CASE STREQUAL "bad_enum_value_fails")
  run(0 "" ${CHECK} write B.bin f64 ${B})
  run(0 "" ${CHECK} write C.bin f64 1 1 1 1 1 1)
  run(1 "parameter 'trans_a' = \"sideways\"; expected one of: none, transpose"
      ${CALL} ${gemm_args} a=zeros:f64:3x4 trans_a=sideways)
  run(2 "alpha=two: expected a number" ${CALL} ${gemm_args} a=zeros:f64:3x4 alpha=two)
  run(2 "a=zeros:f65:3x4: expected @PATH" ${CALL} ${gemm_args} a=zeros:f65:3x4)
elseif(CASE STREQUAL "list_shows_gemm_signature")
  run(0 "gemm a b c \\[trans_a=none\\] \\[trans_b=none\\] \\[alpha=1\\] \\[beta=0\\].*lu a ipiv"
      ${CALL} --list)
else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()
