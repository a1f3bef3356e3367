/* json_read.h — a small JSON reader for the documents `clops` writes and reads back: the shard
 * manifests that `clops run --shard` leaves and `clops gather` checks (json_read.c). It parses a
 * whole text (RFC 8259) into a tree; no dependency. */
#ifndef CLOPS_CLI_JSON_READ_H
#define CLOPS_CLI_JSON_READ_H

#include <stddef.h>
#include <stdint.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_value {
    enum json_type type;
    int boolean;
    double number;
    int64_t integer;          /* a number written without fraction or exponent, exactly */
    int is_integer;           /* ... that fits in int64_t */
    char *string;             /* UTF-8, NUL-terminated (a string with \u0000 ends there) */
    struct json_value *items; /* an array's elements, an object's members' values */
    char **keys;              /* an object's members' names, in the text's order */
    int count;                /* elements or members */
};

/* Parses `text` (`size` bytes: one value, blanks around it). 0, or -1 with "line N: what" in
 * `err`; *out must be freed with json_value_free() either way. Nesting deeper than 64 levels is
 * refused. */
int json_parse(const char *text, size_t size, struct json_value *out, char *err, size_t errsize);
/* The largest file json_parse_file reads. A shard's manifest takes some 500 to 800 bytes a run
 * of one file, so 1 GiB holds the most runs a sweep has (10^6). */
#define JSON_READ_MAX_BYTES (INT64_C(1) << 30)

/* Reads and parses the file at `path`; -1 with "PATH: what" in `err` when it cannot be read or
 * parsed: when it is no regular file (a FIFO would block the read, a device such as /dev/zero
 * never end it) or is over JSON_READ_MAX_BYTES. */
int json_parse_file(const char *path, struct json_value *out, char *err, size_t errsize);
void json_value_free(struct json_value *v);

/* An object's member `key`, or NULL (also when `object` is NULL or no object). */
const struct json_value *json_member(const struct json_value *object, const char *key);
/* A member's string, or NULL when it is missing or no string. */
const char *json_member_text(const struct json_value *object, const char *key);
/* A member's integer into *out: 0, or -1 when it is missing or no integer. */
int json_member_integer(const struct json_value *object, const char *key, int64_t *out);

#endif
