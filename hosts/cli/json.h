/* json.h — a small streaming JSON writer for the `clops` command's machine-readable output
 * (`ops --json`, `devices --json`, `run --json`). No allocation, no dependency; one value per
 * writer.
 *
 * A document is written in order with calls that mirror its text:
 *
 *     struct json_writer w;
 *     json_init(&w, stdout, JSON_PRETTY);
 *     json_begin_object(&w);
 *     json_key(&w, "schema");  json_string(&w, "clops-ops/1");
 *     json_key(&w, "sizes");   json_begin_array(&w); json_int(&w, 3); json_end_array(&w);
 *     json_end_object(&w);
 *     if (json_finish(&w) != JSON_OK) ...
 *
 * Values:
 * - Strings are UTF-8. `"`, `\` and the control characters U+0000..U+001F are escaped (\b \f
 *   \n \r \t, the others as \u00XX); valid UTF-8 is passed through unchanged; every byte that
 *   does not start a valid UTF-8 sequence (a stray continuation byte, an overlong form, a
 *   surrogate, a code point past U+10FFFF, a sequence cut short) is written as U+FFFD, the
 *   replacement character, so the output is always valid UTF-8 and valid JSON.
 * - Integers are int64_t, written exactly.
 * - Doubles are written with the fewest significant digits (up to 17) that read back as the
 *   same double, laid out as Python's repr(): positional for decimal exponents -4..15 (0.0001,
 *   100.0, -0.0), else scientific (1e-05, 1.5e+300); an integral value gets ".0". JSON has no
 *   NaN or infinity: those are written as null.
 *
 * Misuse (a value where a key is due, a key inside an array, an end that does not match its
 * begin, nesting deeper than JSON_MAX_DEPTH, a second top-level value, json_finish with open
 * containers) is a bug in the caller: the writer records JSON_ERR_MISUSE, writes nothing more,
 * and json_finish reports it. It never aborts. */
#ifndef CLOPS_CLI_JSON_H
#define CLOPS_CLI_JSON_H

#include <stdint.h>
#include <stdio.h>

enum { JSON_MAX_DEPTH = 32 };

enum json_style {
    JSON_COMPACT = 0, /* {"a":[1,2]}: no blank anywhere */
    JSON_PRETTY = 1   /* one member or element a line, indented by 2 spaces a level */
};

enum json_status {
    JSON_OK = 0,
    JSON_ERR_MISUSE = 1, /* the calls did not form one well-nested value */
    JSON_ERR_IO = 2      /* writing to the stream failed */
};

/* The writer's state; its members are private to json.c. */
struct json_writer {
    FILE *out;
    int style;  /* enum json_style */
    int status; /* enum json_status: the first failure, sticky */
    int depth;  /* open containers */
    int done;   /* the top-level value is complete */
    int after_key;
    int count[JSON_MAX_DEPTH];            /* members or elements written in each open container */
    unsigned char object[JSON_MAX_DEPTH]; /* 1: that container is an object */
};

/* Starts a document on `out` (which stays the caller's) in `style`. */
void json_init(struct json_writer *w, FILE *out, enum json_style style);

void json_begin_object(struct json_writer *w);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w);
void json_end_array(struct json_writer *w);
/* The next member's name, inside an object; its value is the next call. */
void json_key(struct json_writer *w, const char *key);

void json_string(struct json_writer *w, const char *s); /* NULL is written as null */
void json_int(struct json_writer *w, int64_t value);
void json_double(struct json_writer *w, double value);
void json_bool(struct json_writer *w, int value); /* true when non-zero */
void json_null(struct json_writer *w);

/* An object's member: json_key, then the value as above. */
void json_member_string(struct json_writer *w, const char *key, const char *value);
void json_member_int(struct json_writer *w, const char *key, int64_t value);
void json_member_double(struct json_writer *w, const char *key, double value);
void json_member_bool(struct json_writer *w, const char *key, int value);

/* Ends the document with a newline and flushes. Returns JSON_OK when exactly one complete value
 * was written and the stream took every byte; else the first failure. */
int json_finish(struct json_writer *w);

#endif
