/* xerbla_expect.h — shared by test_xerbla.c and test_xerbla64.c: the routine name a replaced
 * xerbla was given, and the checks that end both programs. */
#ifndef CLOPS_XERBLA_EXPECT_H
#define CLOPS_XERBLA_EXPECT_H

#include <stdio.h>
#include <string.h>

#include "lapack.h"

static char seen_name[16];

/* LAPACK passes the name blank-padded to srname_len, without a terminating NUL. */
static void remember_name(const char *srname, size_t srname_len)
{
    size_t len = srname_len < sizeof seen_name - 1 ? srname_len : sizeof seen_name - 1;
    while (len > 0 && srname[len - 1] == ' ')
        len--;
    memcpy(seen_name, srname, len);
    seen_name[len] = '\0';
}

/* The checks after every rejected call: they wrote nothing (untouched) and none reached clops.
 * Prints them and the verdict; returns main's exit status. */
static int finish(int untouched, int failures)
{
    printf("%s rejected calls wrote nothing\n", untouched ? "PASS" : "FAIL");
    failures += !untouched;
    int calls = clops_lapack_calls();
    printf("%s rejected calls never reached clops (%d calls)\n", calls == 0 ? "PASS" : "FAIL",
           calls);
    failures += calls != 0;
    printf("%s\n", failures == 0 ? "ALL PASS" : "FAILED");
    return failures == 0 ? 0 : 1;
}

#endif
