/* interrupt.h — SIGINT and SIGTERM while `clops run` runs its pipeline: caught into a flag that
 * the wait for a step's call reads (it then cancels the call), so that the run stops with its
 * outputs unwritten and the conventional exit status; before and after, the signals do what
 * they did. */
#ifndef CLOPS_CLI_INTERRUPT_H
#define CLOPS_CLI_INTERRUPT_H

/* Catches SIGINT and SIGTERM from now on, each once: a second Ctrl-C ends the process at once,
 * as it would have without clops (for a call that does not stop). A signal ignored when clops
 * started (SIGINT in a script's `clops run ... &`) stays ignored. */
void interrupt_catch(void);
/* The signals do again what they did before interrupt_catch; what was caught stays readable. */
void interrupt_restore(void);
/* The first signal caught since interrupt_catch (SIGINT or SIGTERM), or 0. */
int interrupt_signal(void);
/* "SIGINT", "SIGTERM". */
const char *interrupt_signal_name(int sig);
/* The exit status of a command stopped by `sig`, as shells report one it killed: 128 + its
 * number (130 for SIGINT, 143 for SIGTERM). */
int interrupt_exit_code(int sig);
/* Whether `code` is that exit code of the signal caught: what a run stopped by it returns. */
int interrupt_stopped(int code);

#endif
