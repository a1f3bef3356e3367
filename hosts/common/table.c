/* table.c — plain-text tables for the host programs: the layouts of table_print (one line a
 * row, wrapped free text, text under its row, records) and the word wrapping they share. */
#include "table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "host_os.h"

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

/* ---- Text: widths and wrapping ----------------------------------------------------------- */

/* Display columns of the `n` bytes at `s`: one per UTF-8 character (a byte that is not a
 * continuation byte). What the hosts print has no double-width or combining characters. */
static int text_columns(const char *s, size_t n)
{
    int columns = 0;
    for (size_t i = 0; i < n; i++)
        columns += ((unsigned char)s[i] & 0xC0) != 0x80;
    return columns;
}

/* The widest of the pieces of `text` between `separators`: its widest line with "\n", its
 * widest word with " \t\n". */
static int widest_piece(const char *text, const char *separators)
{
    int widest = 0;
    for (const char *p = text; *p != '\0';) {
        size_t n = strcspn(p, separators);
        int w = text_columns(p, n);
        widest = w > widest ? w : widest;
        p += n;
        if (*p != '\0')
            p++;
    }
    return widest;
}

/* `text` with each run of blanks made one and line breaks put between words, so that its first
 * line takes at most `first` columns and the others at most `width`; a word wider than that is a
 * line of its own, never cut. Line breaks in `text` are kept. The caller frees. */
static char *wrap_text(const char *text, int first, int width)
{
    /* Never longer than text: each separator written stands for at least one of its blanks. */
    char *out = host_xmalloc(strlen(text) + 1);
    size_t used = 0;
    int at = 0, words = 0, limit = first; /* columns and words on the current line */
    for (const char *p = text; *p != '\0';) {
        if (*p == '\n') {
            out[used++] = '\n';
            at = words = 0;
            limit = width;
            p++;
            continue;
        }
        if (*p == ' ' || *p == '\t') {
            p++;
            continue;
        }
        size_t n = strcspn(p, " \t\n");
        int w = text_columns(p, n);
        if (words > 0 && at + 1 + w > limit) {
            out[used++] = '\n';
            at = words = 0;
            limit = width;
        } else if (words > 0) {
            out[used++] = ' ';
            at++;
        }
        memcpy(out + used, p, n);
        used += n;
        at += w;
        words++;
        p += n;
    }
    out[used] = '\0';
    return out;
}

/* The line of `*text` that starts there, as *length bytes; advances *text to the next line, or
 * to NULL after the last one. */
static const char *take_line(const char **text, size_t *length)
{
    const char *line = *text;
    if (line == NULL) {
        *length = 0;
        return "";
    }
    *length = strcspn(line, "\n");
    *text = line[*length] == '\n' ? line + *length + 1 : NULL;
    return line;
}

/* Writes a line, holding blanks back until text follows them: no line ends in blanks. */
struct line_out {
    FILE *out;
    int blanks;
};

static void put_blanks(struct line_out *o, int count)
{
    o->blanks += count > 0 ? count : 0;
}

static void put_text(struct line_out *o, const char *text, size_t length)
{
    if (length == 0)
        return;
    fprintf(o->out, "%*s", o->blanks, "");
    o->blanks = 0;
    fwrite(text, 1, length, o->out);
}

static void end_line(struct line_out *o)
{
    o->blanks = 0;
    fputc('\n', o->out);
}

/* Prints the lines of `wrapped`, the first after `first` blanks (where the cursor is), the others
 * after `indent` blanks; ends with a newline. */
static void print_lines(FILE *out, const char *wrapped, int first, int indent)
{
    struct line_out o = {out, first};
    for (const char *next = wrapped; next != NULL;) {
        size_t length;
        const char *line = take_line(&next, &length);
        put_text(&o, line, length);
        end_line(&o);
        o.blanks = indent;
    }
}

void host_print_wrapped(FILE *out, const char *text, int column, int indent, int width)
{
    char *wrapped = wrap_text(text, width - column, width - indent);
    print_lines(out, wrapped, 0, indent);
    free(wrapped);
}

int host_output_width(FILE *out, int fallback)
{
    const char *columns = getenv("COLUMNS");
    if (columns != NULL) {
        char *end;
        long value = strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && value > 0 && value < 100000)
            return (int)value;
    }
    int terminal = host_terminal_columns(out);
    return terminal > 0 ? terminal : fallback;
}

/* ---- Layout ------------------------------------------------------------------------------- */

struct layout {
    int *widths;  /* of each column */
    int *natural; /* each column's widest line */
    int *floors;  /* the least each column may narrow to */
    int shown;    /* columns side by side: all, or all but the last when `below` */
    int below;    /* the last column's text goes under its row */
    int below_at; /* ... starting at this column */
    int records;  /* one record per row */
};

static int wraps(const struct table *t, int c)
{
    return (t->columns[c].align & TABLE_WRAP) != 0;
}

/* The columns a line of the first `count` columns takes, `indent` included. */
static int line_width(const int *widths, int count, int indent)
{
    int width = indent;
    for (int c = 0; c < count; c++)
        width += widths[c] + (c ? 2 : 0);
    return width;
}

/* Narrows the TABLE_WRAP columns among the first `count`, the widest first, until their line fits
 * `width` or none can narrow further. Returns whether it fits. */
static int narrow_to_fit(const struct table *t, struct layout *l, int count, int indent, int width)
{
    for (int excess = line_width(l->widths, count, indent) - width; excess > 0; excess--) {
        int widest = -1;
        for (int c = 0; c < count; c++)
            if (wraps(t, c) && l->widths[c] > l->floors[c] &&
                (widest < 0 || l->widths[c] > l->widths[widest]))
                widest = c;
        if (widest < 0)
            return 0;
        l->widths[widest]--;
    }
    return 1;
}

static void measure(const struct table *t, struct layout *l)
{
    for (int c = 0; c < t->column_count; c++) {
        int title = text_columns(t->columns[c].title, strlen(t->columns[c].title));
        int natural = title, word = title;
        for (int r = 0; r < t->row_count; r++) {
            int line = widest_piece(cell_text(t, r, c), "\n");
            int longest = widest_piece(cell_text(t, r, c), " \t\n");
            natural = line > natural ? line : natural;
            word = longest > word ? longest : word;
        }
        int least = natural < TABLE_MIN_WRAP ? natural : TABLE_MIN_WRAP;
        l->natural[c] = natural;
        l->floors[c] = wraps(t, c) ? (word > least ? word : least) : natural;
    }
}

/* Chooses the first layout of table_print's list that fits t->width. */
static void choose_layout(const struct table *t, int indent, struct layout *l)
{
    int n = t->column_count, last = n - 1;
    measure(t, l);
    memcpy(l->widths, l->natural, (size_t)n * sizeof *l->widths);
    l->shown = n;
    if (t->width <= 0 || line_width(l->widths, n, indent) <= t->width)
        return;
    int last_wraps = n > 1 && wraps(t, last);
    int least_last = l->natural[last] < TABLE_MIN_LAST ? l->natural[last] : TABLE_MIN_LAST;
    if (narrow_to_fit(t, l, n, indent, t->width) && !(last_wraps && l->widths[last] < least_last))
        return;
    memcpy(l->widths, l->natural, (size_t)n * sizeof *l->widths);
    if (last_wraps && narrow_to_fit(t, l, last, indent, t->width)) {
        l->shown = last;
        l->below = 1;
        l->below_at = indent + l->widths[0] + 2;
        return;
    }
    l->records = 1;
}

/* ---- Printing ----------------------------------------------------------------------------- */

/* One row (or the header) side by side: each cell wrapped to its column's width, continuation
 * lines until every cell is done; then the text that goes under it. */
static void print_row(const struct table *t, FILE *out, int indent, const struct layout *l,
                      const char *const *texts)
{
    char **wrapped = host_xcalloc((size_t)l->shown, sizeof *wrapped);
    const char **next = host_xcalloc((size_t)l->shown, sizeof *next);
    for (int c = 0; c < l->shown; c++) {
        int narrowed = wraps(t, c) && l->widths[c] < l->natural[c];
        wrapped[c] =
            narrowed ? wrap_text(texts[c], l->widths[c], l->widths[c]) : host_xstrdup(texts[c]);
        next[c] = wrapped[c];
    }
    for (int more = 1; more;) {
        more = 0;
        struct line_out o = {out, indent};
        for (int c = 0; c < l->shown; c++) {
            size_t length;
            const char *line = take_line(&next[c], &length);
            int pad = l->widths[c] - text_columns(line, length);
            if (t->columns[c].align & TABLE_RIGHT)
                put_blanks(&o, pad);
            put_text(&o, line, length);
            if (!(t->columns[c].align & TABLE_RIGHT))
                put_blanks(&o, pad);
            put_blanks(&o, 2);
            more |= next[c] != NULL;
        }
        end_line(&o);
    }
    if (l->below && texts[l->shown][0] != '\0') {
        int room = t->width - l->below_at;
        char *text = wrap_text(texts[l->shown], room, room);
        print_lines(out, text, l->below_at, l->below_at);
        free(text);
    }
    for (int c = 0; c < l->shown; c++)
        free(wrapped[c]);
    free(wrapped);
    free(next);
}

/* Layout 3: a line per column, its title and its value. */
static void print_records(const struct table *t, FILE *out, int indent)
{
    int key = 0;
    for (int c = 0; c < t->column_count; c++) {
        int w = text_columns(t->columns[c].title, strlen(t->columns[c].title));
        key = w > key ? w : key;
    }
    int room = t->width - indent - key - 2;
    for (int r = 0; r < t->row_count; r++) {
        if (r > 0)
            fputc('\n', out);
        for (int c = 0; c < t->column_count; c++) {
            const char *title = t->columns[c].title;
            struct line_out o = {out, indent};
            put_text(&o, title, strlen(title));
            put_blanks(&o, key - text_columns(title, strlen(title)) + 2);
            char *value = wrap_text(cell_text(t, r, c), room, room);
            size_t length;
            const char *next = value, *line = take_line(&next, &length);
            put_text(&o, line, length);
            end_line(&o);
            if (next != NULL)
                print_lines(out, next, indent + key + 2, indent + key + 2);
            free(value);
        }
    }
}

void table_print(const struct table *t, FILE *out, int indent)
{
    int n = t->column_count;
    struct layout l = {.widths = host_xcalloc((size_t)n, sizeof(int)),
                       .natural = host_xcalloc((size_t)n, sizeof(int)),
                       .floors = host_xcalloc((size_t)n, sizeof(int))};
    const char **texts = host_xcalloc((size_t)n, sizeof *texts);
    choose_layout(t, indent, &l);
    if (l.records) {
        print_records(t, out, indent);
    } else {
        struct layout header = l;
        header.below = 0; /* the text under the rows has no title */
        for (int c = 0; c < n; c++)
            texts[c] = t->columns[c].title;
        print_row(t, out, indent, &header, texts);
        /* The rule spans the columns, or the whole width when text goes under the rows. */
        int rule = l.below ? t->width - indent : line_width(l.widths, l.shown, 0);
        fprintf(out, "%*s", indent, "");
        for (int i = rule; i > 0; i--)
            fputc('-', out);
        fputc('\n', out);
        for (int r = 0; r < t->row_count; r++) {
            for (int c = 0; c < n; c++)
                texts[c] = cell_text(t, r, c);
            print_row(t, out, indent, &l, texts);
        }
    }
    free(texts);
    free(l.floors);
    free(l.natural);
    free(l.widths);
}

void table_free(struct table *t)
{
    for (size_t i = 0; i < (size_t)t->row_count * (size_t)t->column_count; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
