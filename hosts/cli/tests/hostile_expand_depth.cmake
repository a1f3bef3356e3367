# hostile_expand_depth.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).
# `${...}` nested deeper than 64 levels of '(' and unary '-' is refused at file:line (or naming
# the --set), however deep: 100,000 levels overflowed the 8 MB stack of the recursive parser.
# The deep files are made at configure time, not kept in the repository (200 KB each).
set(expand_dir ${PROJECT_BINARY_DIR}/cli-test-expand)
string(REPEAT "(" 100000 expand_open)
string(REPEAT ")" 100000 expand_close)
string(REPEAT "- " 100000 expand_minus)
foreach(kind parens unary)
  if(kind STREQUAL "parens")
    set(expand_expr "${expand_open}n${expand_close}")
  else()
    set(expand_expr "${expand_minus}n")
  endif()
  file(WRITE ${expand_dir}/deep_${kind}.cfg
       "# deep_${kind}.cfg — made by hostile_expand_depth.cmake\n"
       "params = { n = 4; };\n"
       "tensors = ( { name = \"A\"; dtype = \"f32\"; shape = [\${${expand_expr}}, 2]; },\n"
       "            { name = \"T\"; dtype = \"f32\"; shape = [2, 4]; } );\n"
       "steps = ( { op = \"transpose\"; args = { x = \"A\"; y = \"T\"; }; } );\n")
endforeach()
string(REPLACE "\${" "[$][{]" expand_parens_shown "\${${expand_open}")
string(SUBSTRING "${expand_parens_shown}" 0 46 expand_parens_shown) # [$][{] and 40 '('
string(REPLACE "(" "[(]" expand_parens_shown "${expand_parens_shown}")
set(too_deep "nested deeper than 64 levels of '[(]' and unary '-'")
clops_pipeline_test(cli_expand_deep_parens_refused 4
  "deep_parens.cfg:3: tensors\\[0\\].shape\\[0\\]: ${expand_parens_shown}[.][.][.][}]: ${too_deep}.*1 error; nothing was run"
  RUN --dry-run ${expand_dir}/deep_parens.cfg)
clops_pipeline_test(cli_expand_deep_unary_refused 4
  "deep_unary.cfg:3: tensors\\[0\\].shape\\[0\\]: [$][{](- )+[.][.][.][}]: ${too_deep}.*1 error; nothing was run"
  RUN --dry-run ${expand_dir}/deep_unary.cfg)
# Through --set: one argument holds at most 128 KB on Linux, so 100,000 '-' without blanks. The
# message shows the start of the assignment and of the expression, not 100 KB of them.
string(REPEAT "-" 100000 expand_dashes)
string(REPEAT "-" 40 expand_dashes_shown)
clops_pipeline_test(cli_expand_deep_set_refused 2
  "clops: --set tensors.Q.shape=\\[[$][{]-+[.][.][.]: [$][{]${expand_dashes_shown}[.][.][.][}]: ${too_deep}"
  RUN --dry-run "--set=tensors.Q.shape=[\${${expand_dashes}n}, 1]" ${cases}/params.cfg)
# What a pipeline really nests still evaluates: 10 levels of '(' and of unary '-'.
clops_pipeline_test(cli_expand_nested_10_deep_evaluates 0
  "Q +zeros +6x6x2 +i32.*Valid; nothing was run"
  RUN --dry-run "--set=tensors.Q.shape=[\${((((((((((n))))))))))}, \${- - - - - - - - - - n}, 2]"
      ${cases}/params.cfg)
