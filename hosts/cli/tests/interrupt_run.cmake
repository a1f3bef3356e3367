# interrupt_run.cmake — `clops run` stopped by a signal in the middle of a long call: started in
# the background, sent SIGNAL (INT or TERM) once its progress line shows the step running, it
# must cancel the call, wait for it, write nothing more and exit with 128 + the signal's number,
# saying which step it cancelled. -D: COMMAND (the clops executable; a list, for clops.exe under
# Wine, which turns SIGINT into the console's Ctrl-C), PIPELINE, OUT_DIR (made afresh), SIGNAL, EXPECT_RC, EXPECT_REGEX (stderr, newlines read as blanks), OUTPUT (the file
# the step would have led to, relative to OUT_DIR: it must not exist).
file(REMOVE_RECURSE "${OUT_DIR}")
file(MAKE_DIRECTORY "${OUT_DIR}")
# A command started with `&` by a shell without job control ignores SIGINT (POSIX), and clops
# leaves an ignored signal ignored: `env --default-signal` gives it back its default first. The
# signal goes at most 120 s after the start, shown or not.
set(script [=[
pipeline=$1 out=$2 sig=$3
shift 3
env --default-signal=INT,TERM "$@" run --progress --output-dir "$out" "$pipeline" \
    >"$out/stdout.log" 2>"$out/stderr.log" &
pid=$!
tries=0
while ! grep -q 'step 1/1 lu' "$out/stderr.log" && [ $tries -lt 1200 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
kill -s "$sig" $pid
wait $pid
echo "exit status $?"
]=])
execute_process(COMMAND sh -c "${script}" sh "${PIPELINE}" "${OUT_DIR}" "${SIGNAL}" ${COMMAND}
                OUTPUT_VARIABLE status RESULT_VARIABLE rc)
file(READ "${OUT_DIR}/stderr.log" err)
file(READ "${OUT_DIR}/stdout.log" out)
string(REPLACE "\n" " " flat "${err}")
string(REPLACE "\r" " " flat "${flat}")
if(NOT status MATCHES "exit status ${EXPECT_RC}\n")
  message(FATAL_ERROR "${status}, expected ${EXPECT_RC}; stderr:\n${err}\nstdout:\n${out}")
endif()
if(NOT flat MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_REGEX}':\n${err}")
endif()
if(EXISTS "${OUT_DIR}/${OUTPUT}")
  message(FATAL_ERROR "${OUT_DIR}/${OUTPUT} was written; stdout:\n${out}")
endif()
if(out MATCHES "Wrote|Steps|Checks")
  message(FATAL_ERROR "more was written after the signal; stdout:\n${out}")
endif()
