/* config_literals.h — the integer literals of libconfig text that libconfig would read wrong
 * without a word: libconfig 1.5 (Debian 12) reads a literal without the L suffix as 32 bits and
 * keeps the low bits (4294967299 becomes 3, 0x100000001 becomes 1), and one with the suffix
 * saturates or wraps beyond 64 bits. Every text clops gives libconfig is scanned first: by the
 * plugin (config.c) and by the CLI, which loads the plugin with dlopen and so compiles this
 * file itself (hosts/cli/CMakeLists.txt). */
#ifndef CLOPS_CONFIG_LITERALS_H
#define CLOPS_CONFIG_LITERALS_H

/* An integer literal that does not fit the width libconfig reads it at. */
struct wide_literal {
    int line; /* from 1 */
    /* "4294967299 does not fit in 32 bits; write 4294967299L", without the place. */
    char message[224];
};

/* The integer literals looked for are decimal or hex, with their sign; strings, comments and
 * @include lines are skipped, and floats such as 1e10 or 4294967299.0 left alone. The scan ends
 * at the end of the text, or at a string or comment left open, whose error libconfig reports. */

/* The first literal of `text` that does not fit, into *out; returns whether there is one. */
int literal_scan_first(const char *text, struct wide_literal *out);

/* Calls `found` with `ctx` for every literal of `text` that does not fit, in order; returns how
 * many there were. */
typedef void (*wide_literal_found)(void *ctx, const struct wide_literal *literal);
int literal_scan_all(const char *text, wide_literal_found found, void *ctx);

#endif
