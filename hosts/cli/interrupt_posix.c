/* interrupt_posix.c — SIGINT and SIGTERM caught while `clops run` runs (interrupt.h). The
 * handler only stores the signal's number: everything else (cancelling the call, the message)
 * happens on the thread that waits for the call, outside the handler. */
#include "interrupt.h"

#include <signal.h>
#include <stddef.h>

static const int signals[] = {SIGINT, SIGTERM};
static struct sigaction saved[sizeof signals / sizeof signals[0]];
static int catching;

/* Async-signal-safe: one store. Both signals are blocked while it runs, so the first one
 * caught is the one kept. */
static void on_signal(int sig)
{
    interrupt_note(sig);
}

void interrupt_catch(void)
{
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART | SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaddset(&sa.sa_mask, signals[i]);
    interrupt_clear();
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        sigaction(signals[i], NULL, &saved[i]);
        if (saved[i].sa_handler != SIG_IGN)
            sigaction(signals[i], &sa, NULL);
    }
    catching = 1;
}

void interrupt_restore(void)
{
    if (!catching)
        return;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &saved[i], NULL);
    catching = 0;
}

const char *interrupt_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}
