/* table.h — plain-text tables for the host programs: columns sized to their widest cell, one
 * header line and a rule, numbers right-aligned where the column asks for it. */
#ifndef CLOPS_HOST_TABLE_H
#define CLOPS_HOST_TABLE_H

#include <stdio.h>

#include "util.h"

enum table_align { TABLE_LEFT = 0, TABLE_RIGHT = 1 };

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
    int width;  /* > 0: wrap the last column's text to keep lines within this many columns */
};

void table_init(struct table *t, const struct table_column *columns, int column_count);
/* Starts a new row; its cells are then given left to right with table_cell(). Cells not
 * given before the next row starts (or before printing) print empty. */
void table_row(struct table *t);
void table_cell(struct table *t, const char *fmt, ...) HOST_PRINTF(2, 3);
/* Prints with `indent` spaces before each line. The last column is not padded, so a long
 * free-text column (a doc string) does not drag trailing blanks along. */
void table_print(const struct table *t, FILE *out, int indent);
void table_free(struct table *t);

/* Prints `text` word-wrapped within `width` columns, starting at column `column` (where the
 * cursor already is); continuation lines are indented by `indent` spaces. Line breaks in
 * `text` are kept. Ends with a newline. */
void host_print_wrapped(FILE *out, const char *text, int column, int indent, int width);

#endif
