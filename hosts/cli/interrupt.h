/* interrupt.h — SIGINT and SIGTERM (on Windows the console's Ctrl-C and Ctrl-Break) while `clops
 * run` runs its pipeline: caught into a flag that the wait for a step's call reads (it then
 * cancels the call), so that the run stops with its outputs unwritten and the conventional exit
 * status; before and after, the signals do what they did. interrupt.c holds the flag,
 * interrupt_posix.c and interrupt_win32.c catch into it. */
#ifndef CLOPS_CLI_INTERRUPT_H
#define CLOPS_CLI_INTERRUPT_H

/* Catches SIGINT and SIGTERM from now on, each once: a second Ctrl-C ends the process at once,
 * as it would have without clops (for a call that does not stop). A signal ignored when clops
 * started (SIGINT in a script's `clops run ... &`) stays ignored. */
void interrupt_catch(void);
/* The signals do again what they did before interrupt_catch; what was caught stays readable. */
void interrupt_restore(void);
/* The first signal caught since interrupt_catch (SIGINT or SIGTERM; SIGINT or SIGBREAK on
 * Windows), or 0. */
int interrupt_signal(void);
/* "SIGINT", "SIGTERM"; "Ctrl-C (SIGINT)", "Ctrl-Break (SIGBREAK)" on Windows. */
const char *interrupt_signal_name(int sig);
/* The exit status of a command stopped by `sig`, as shells report one it killed: 128 + its
 * number (130 for SIGINT, 143 for SIGTERM). */
int interrupt_exit_code(int sig);
/* Whether `code` is that exit code of the signal caught: what a run stopped by it returns. */
int interrupt_stopped(int code);

/* For the OS's handlers (interrupt_posix.c, interrupt_win32.c): forgets what was caught; keeps
 * `sig` unless a signal was caught already (async-signal-safe: one store). */
void interrupt_clear(void);
void interrupt_note(int sig);

#endif
