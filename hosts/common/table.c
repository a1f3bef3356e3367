/* table.c — plain-text tables for the host programs. */
#include "table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void table_init(struct table *t, const struct table_column *columns, int column_count)
{
    memset(t, 0, sizeof *t);
    t->columns = columns;
    t->column_count = column_count;
}

void table_row(struct table *t)
{
    if (t->row_count == t->row_capacity) {
        int capacity = t->row_capacity ? 2 * t->row_capacity : 16;
        char **cells = host_xcalloc((size_t)capacity * (size_t)t->column_count, sizeof *cells);
        if (t->cells != NULL)
            memcpy(cells, t->cells, (size_t)t->row_count * (size_t)t->column_count * sizeof *cells);
        free(t->cells);
        t->cells = cells;
        t->row_capacity = capacity;
    }
    t->row_count++;
    t->filled = 0;
}

void table_cell(struct table *t, const char *fmt, ...)
{
    if (t->row_count == 0 || t->filled == t->column_count)
        return; /* a caller bug; dropping the cell keeps the table readable */
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        text = host_xstrdup("?");
    t->cells[(size_t)(t->row_count - 1) * (size_t)t->column_count + (size_t)t->filled] = text;
    t->filled++;
}

static const char *cell_text(const struct table *t, int row, int col)
{
    const char *text = t->cells[(size_t)row * (size_t)t->column_count + (size_t)col];
    return text != NULL ? text : "";
}

void host_print_wrapped(FILE *out, const char *text, int column, int indent, int width)
{
    int at = column, space = 0; /* space: a blank is due before the next word */
    for (const char *p = text; *p != '\0';) {
        if (*p == ' ' || *p == '\n') {
            if (*p == '\n') {
                fputc('\n', out);
                at = 0;
            }
            space = *p == ' ' && at > 0;
            p++;
            continue;
        }
        int word = (int)strcspn(p, " \n");
        if (at == 0 || (at > indent && at + space + word > width)) {
            fprintf(out, "%s%*s", at == 0 ? "" : "\n", indent, "");
            at = indent;
        } else if (space) {
            fputc(' ', out);
            at++;
        }
        space = 0;
        fwrite(p, 1, (size_t)word, out);
        at += word;
        p += word;
    }
    fputc('\n', out);
}

static void print_line(const struct table *t, FILE *out, int indent, const int *widths,
                       const char *const *texts)
{
    fprintf(out, "%*s", indent, "");
    int column = indent;
    for (int c = 0; c < t->column_count; c++) {
        int last = c == t->column_count - 1;
        if (t->columns[c].align == TABLE_RIGHT)
            fprintf(out, "%*s", widths[c], texts[c]);
        else if (!last)
            fprintf(out, "%-*s", widths[c], texts[c]);
        else if (t->width > 0)
            host_print_wrapped(out, texts[c], column, column, t->width);
        else
            fputs(texts[c], out);
        column += widths[c] + 2;
        if (!last)
            fputs("  ", out);
        else if (t->columns[c].align == TABLE_RIGHT || t->width <= 0)
            fputc('\n', out);
    }
}

void table_print(const struct table *t, FILE *out, int indent)
{
    int *widths = host_xcalloc((size_t)t->column_count, sizeof *widths);
    const char **texts = host_xcalloc((size_t)t->column_count, sizeof *texts);
    for (int c = 0; c < t->column_count; c++) {
        widths[c] = (int)strlen(t->columns[c].title);
        for (int r = 0; r < t->row_count; r++) {
            int w = (int)strlen(cell_text(t, r, c));
            widths[c] = w > widths[c] ? w : widths[c];
        }
    }
    for (int c = 0; c < t->column_count; c++)
        texts[c] = t->columns[c].title;
    print_line(t, out, indent, widths, texts);

    int rule = 0;
    for (int c = 0; c < t->column_count; c++)
        rule += widths[c] + (c ? 2 : 0);
    if (t->width > 0 && indent + rule > t->width)
        rule = t->width - indent;
    fprintf(out, "%*s", indent, "");
    for (int i = 0; i < rule; i++)
        fputc('-', out);
    fputc('\n', out);

    for (int r = 0; r < t->row_count; r++) {
        for (int c = 0; c < t->column_count; c++)
            texts[c] = cell_text(t, r, c);
        print_line(t, out, indent, widths, texts);
    }
    free(texts);
    free(widths);
}

void table_free(struct table *t)
{
    for (size_t i = 0; i < (size_t)t->row_count * (size_t)t->column_count; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
