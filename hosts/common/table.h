/* table.h — plain-text tables for the host programs: columns sized to their widest cell, one
 * header line and a rule, numbers right-aligned where the column asks for it; given a width,
 * free text wraps at blanks so that lines stay within it, and no word or number is ever cut. */
#ifndef CLOPS_HOST_TABLE_H
#define CLOPS_HOST_TABLE_H

#include <stdio.h>

#include "util.h"

/* A column's alignment, and whether its text may wrap. */
enum table_align {
    TABLE_LEFT = 0,
    TABLE_RIGHT = 1, /* numbers: right-aligned, never wrapped */
    TABLE_WRAP = 2   /* left-aligned free text that may wrap at blanks (see table_print) */
};

struct table_column {
    const char *title;
    int align; /* enum table_align */
};

struct table {
    const struct table_column *columns;
    int column_count;
    char **cells; /* row-major, column_count per row; malloc'd strings */
    int row_count;
    int row_capacity;
    int filled; /* cells given so far in the last row */
    int width;  /* > 0: keep lines within this many columns (table_print says how); 0: no limit */
};

void table_init(struct table *t, const struct table_column *columns, int column_count);
/* Starts a new row; its cells are then given left to right with table_cell(). Cells not
 * given before the next row starts (or before printing) print empty. */
void table_row(struct table *t);
void table_cell(struct table *t, const char *fmt, ...) HOST_PRINTF(2, 3);
/* Prints with `indent` spaces before each line; no line ends in blanks. Widths are counted in
 * characters (UTF-8), not bytes.
 *
 * With t->width = 0, or when every cell fits on one line within t->width, each row is one line.
 * Otherwise, in this order, the first layout that fits within t->width:
 * 1. TABLE_WRAP columns narrow, the widest first, though never below their longest word or
 *    TABLE_MIN_WRAP characters (or their natural width, when less); their cells wrap at blanks
 *    onto continuation lines.
 * 2. When the last column is TABLE_WRAP and would be left fewer than TABLE_MIN_LAST characters,
 *    its text goes under its row instead, wrapped across the whole width, and the other columns
 *    narrow as in 1.
 * 3. One record per row: a line per column, its title and its value (values wrapped).
 * A word (or a number) wider than the room it gets is printed whole, past the width. */
void table_print(const struct table *t, FILE *out, int indent);
void table_free(struct table *t);

enum { TABLE_MIN_WRAP = 16, TABLE_MIN_LAST = 40 };

/* Prints `text` word-wrapped within `width` columns, starting at column `column` (where the
 * cursor already is); continuation lines are indented by `indent` spaces. Line breaks in
 * `text` are kept; runs of blanks become one. Ends with a newline. */
void host_print_wrapped(FILE *out, const char *text, int column, int indent, int width);

/* The width text written to `out` should keep within: $COLUMNS when it is a number > 0, else
 * the terminal's width when `out` is a terminal, else `fallback`. */
int host_output_width(FILE *out, int fallback);

#endif
