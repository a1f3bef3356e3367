/* config_literals.h — the integer literals of libconfig text that libconfig would read wrong
 * without a word: libconfig 1.5 (Debian 12) reads a literal without the L suffix as 32 bits and
 * keeps the low bits (4294967299 becomes 3, 0x100000001 becomes 1), and one with the suffix
 * saturates or wraps beyond 64 bits. Every text clops gives libconfig is scanned first: by the
 * plugin (config.c) and by the CLI, which loads the plugin with dlopen and so compiles this
 * file itself (hosts/cli/CMakeLists.txt). */
#ifndef CLOPS_CONFIG_LITERALS_H
#define CLOPS_CONFIG_LITERALS_H

/* A scan of one text; the text must stay until the scan ends. */
struct literal_scan {
    const char *at; /* where the scan goes on */
    int line;       /* the line `at` is on, from 1 */
};

/* An integer literal that does not fit the width libconfig reads it at. */
struct wide_literal {
    int line;
    /* "4294967299 does not fit in 32 bits; write 4294967299L", without the place. */
    char message[224];
};

void literal_scan_start(struct literal_scan *scan, const char *text);

/* Finds the next integer literal that does not fit (decimal or hex, with its sign; strings,
 * comments and @include lines skipped, floats such as 1e10 or 4294967299.0 left alone).
 * Returns 1 with it in *out, or 0 at the end of the text or at a string or comment left open,
 * whose error libconfig reports. */
int literal_scan_next(struct literal_scan *scan, struct wide_literal *out);

#endif
