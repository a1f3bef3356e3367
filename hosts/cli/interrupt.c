/* interrupt.c — what `clops run`'s interruption is on every OS (interrupt.h): the flag the OS's
 * handler stores the first signal into (interrupt_posix.c: SIGINT and SIGTERM; interrupt_win32.c:
 * the console's Ctrl-C and Ctrl-Break), read by the thread that waits for the call, and the exit
 * status it gives. */
#include "interrupt.h"

#include <signal.h>

static volatile sig_atomic_t caught;

void interrupt_clear(void)
{
    caught = 0;
}

void interrupt_note(int sig)
{
    if (caught == 0)
        caught = sig;
}

int interrupt_signal(void)
{
    return caught;
}

int interrupt_exit_code(int sig)
{
    return 128 + sig;
}

int interrupt_stopped(int code)
{
    return caught != 0 && code == interrupt_exit_code(caught);
}
