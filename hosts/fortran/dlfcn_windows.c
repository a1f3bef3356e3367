/* dlfcn_windows.c — the three POSIX calls the Fortran binding (clops.f90) binds, dlopen, dlsym and
 * dlerror, over LoadLibraryA, GetProcAddress and FormatMessageA: compiled with the binding on
 * Windows only, so that clops.f90 stays one file that needs no preprocessor. */
#ifdef _WIN32
#include <stdio.h>
#include <string.h>
#include <windows.h>

/* dlerror()'s text: set by a failed call, read and cleared once, per thread as POSIX has it. */
static _Thread_local char last_error[512];
static _Thread_local int has_error;

static void set_error(const char *what)
{
    DWORD code = GetLastError();
    char message[256];
    DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, code,
                             0, message, sizeof message, NULL);
    /* The system's messages end in ".\r\n". */
    while (n > 0 && strchr(".\r\n ", message[n - 1]) != NULL)
        message[--n] = '\0';
    snprintf(last_error, sizeof last_error, "%s: %s (error %lu)", what, n > 0 ? message : "failed",
             (unsigned long)code);
    has_error = 1;
}

/* `flags` are ignored: Windows binds every import when it loads a DLL, and a DLL's exports are
 * reached only through its handle. A bare name is searched for in the DLL search order, which
 * starts in the directory of the .exe. */
void *dlopen(const char *path, int flags)
{
    (void)flags;
    HMODULE module = LoadLibraryA(path);
    if (module == NULL)
        set_error(path);
    return module;
}

void *dlsym(void *handle, const char *symbol)
{
    /* The Fortran side takes the address as a c_funptr: FARPROC passes through unchanged. */
    FARPROC address = GetProcAddress((HMODULE)handle, symbol);
    if (address == NULL) {
        set_error(symbol);
        return NULL;
    }
    void *out;
    memcpy(&out, &address, sizeof out);
    return out;
}

char *dlerror(void)
{
    if (!has_error)
        return NULL;
    has_error = 0;
    return last_error;
}
#endif
