/* names.h — file names that come from a pipeline or back from a manifest on disk (names.c):
 * whether they are UTF-8 (a manifest can carry nothing else), when two of them name one file,
 * whether one stays under the output directory, and how to print one on a terminal. */
#ifndef CLOPS_CLI_NAMES_H
#define CLOPS_CLI_NAMES_H

#include <stddef.h>

/* The offset of the first byte of `s` that does not begin a well-formed UTF-8 sequence
 * (overlong forms, surrogates and code points over U+10FFFF are ill-formed), or -1 when it is
 * all UTF-8. */
long name_utf8_error(const char *s);

/* `path` normalised lexically, without looking at the disk: slashes collapsed, `.` dropped,
 * `dir/..` removed (`..` above the root of an absolute path is the root; leading `..` of a
 * relative path are kept); "." for a relative path that names its start. Allocated. Two names
 * with equal normal forms name one file ("x.npy", "./x.npy", "sub/../x.npy"). */
char *name_normalized(const char *path);

/* Whether the relative name `name` stays under the directory it is relative to: not absolute,
 * not the directory itself, and no `..` that climbs out of it ("a/../../x" does). */
int name_stays_under(const char *name);

/* `s` made safe to print on a terminal, and one line: control characters (C0, DEL and the C1
 * range), bytes that are not UTF-8 and backslashes are written \xHH (\\ for a backslash), so
 * that a name cannot move the cursor or retitle the window, and different names stay
 * different. Allocated. */
char *name_escaped(const char *s);

#endif
