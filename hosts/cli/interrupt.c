/* interrupt.c — SIGINT and SIGTERM caught into a flag while `clops run` runs (interrupt.h). The
 * handler only stores the signal's number: everything else (cancelling the call, the message)
 * happens on the thread that waits for the call, outside the handler. */
#include "interrupt.h"

#include <signal.h>
#include <stddef.h>

static volatile sig_atomic_t caught;

static const int signals[] = {SIGINT, SIGTERM};
static struct sigaction saved[sizeof signals / sizeof signals[0]];
static int catching;

/* Async-signal-safe: one store. Both signals are blocked while it runs, so the first one
 * caught is the one kept. */
static void on_signal(int sig)
{
    if (caught == 0)
        caught = sig;
}

void interrupt_catch(void)
{
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART | SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaddset(&sa.sa_mask, signals[i]);
    caught = 0;
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

int interrupt_signal(void)
{
    return caught;
}

const char *interrupt_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

int interrupt_exit_code(int sig)
{
    return 128 + sig;
}

int interrupt_stopped(int code)
{
    return caught != 0 && code == interrupt_exit_code(caught);
}
