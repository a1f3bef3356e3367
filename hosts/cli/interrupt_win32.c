/* interrupt_win32.c — the console's Ctrl-C and Ctrl-Break caught while `clops run` runs
 * (interrupt.h), as SIGINT and SIGBREAK: the handler, which Windows runs on a thread of its own,
 * only stores the first one; the thread that waits for the call cancels it. */
#include "interrupt.h"

#include <signal.h>
#include <windows.h>

static int catching;

/* The first event is kept and handled (TRUE); any later one goes on to the next handler,
 * Windows' own, which ends the process: a second Ctrl-C stops a call that does not stop. A
 * console being closed, a logoff or a shutdown are left to Windows: it ends the process as soon
 * as the handlers return, too soon for a cancelled call to be waited for. */
static BOOL WINAPI on_console_event(DWORD event)
{
    int sig = event == CTRL_C_EVENT ? SIGINT : event == CTRL_BREAK_EVENT ? SIGBREAK : 0;
    if (sig == 0 || interrupt_signal() != 0)
        return FALSE;
    interrupt_note(sig);
    return TRUE;
}

/* Where Ctrl-C was ignored when clops started (a process started with it disabled, as
 * CREATE_NEW_PROCESS_GROUP does), Windows calls no handler for it: it stays ignored. */
void interrupt_catch(void)
{
    interrupt_clear();
    catching = SetConsoleCtrlHandler(on_console_event, TRUE) != 0;
}

void interrupt_restore(void)
{
    if (catching)
        SetConsoleCtrlHandler(on_console_event, FALSE);
    catching = 0;
}

const char *interrupt_signal_name(int sig)
{
    return sig == SIGINT     ? "Ctrl-C (SIGINT)"
           : sig == SIGBREAK ? "Ctrl-Break (SIGBREAK)"
                             : "a signal";
}
