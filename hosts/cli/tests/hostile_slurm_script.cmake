# hostile_slurm_script.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).

# D5: values that `clops slurm` writes into the job script (tests/check_slurm_script.py). A
# newline, a carriage return or another control character in an sbatch option, --set or
# --output-dir is refused, naming the option, before any script is written or submitted.
# Blanks, quotes, $(...), backticks, '#', '%' and backslashes in the directory, the pipeline's
# path, --set and the sbatch options reach clops (the script run by bash) and sbatch (its
# #SBATCH lines read as sbatch reads them) unchanged, and nothing in them runs.
function(clops_slurm_script_test name mode)
  add_test(NAME ${name}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_slurm_script.py
                   ${mode} $<TARGET_FILE:clops_cli> ${CMAKE_CURRENT_SOURCE_DIR}/tests
                   ${PROJECT_BINARY_DIR}/cli-test-slurm-${mode})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache" TIMEOUT 300)
endfunction()
clops_slurm_script_test(cli_slurm_script_refuses_control_characters refuse)
clops_slurm_script_test(cli_slurm_script_passes_hostile_values_unchanged quote)
