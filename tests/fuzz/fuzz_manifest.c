/* fuzz_manifest.c — libFuzzer harness for the JSON reader and the shard manifests that `clops run
 * --shard` reads back and `clops gather` checks (hosts/cli/json_read.c json_parse, manifest.c):
 * the input is a manifest's text, which anyone can edit. It is parsed in memory and the tree
 * checked against json_read.h; a parsed one is then read as a manifest (manifest_read, from a
 * private file), compared with itself (manifest_same_set) and its files checked under a private
 * output directory that holds one file, a.npy (manifest_check_files). Messages go to a callback
 * that checks them. The stack is small (fuzz_small_stack): a parser that recursed without a
 * limit would overflow it within libFuzzer's default input length. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"
#include "json_read.h"
#include "manifest.h"

enum { PATH_SIZE = 512 };

static char manifest_path[PATH_SIZE], output_dir[PATH_SIZE];

/* The private output directory, with a.npy (6 bytes) for manifests that list it. */
static void make_output_dir(void)
{
    fuzz_temp_path("out", output_dir, sizeof output_dir);
    if (mkdir(output_dir, 0700) != 0)
        abort();
    char path[PATH_SIZE];
    fuzz_temp_path("out/a.npy", path, sizeof path);
    fuzz_write_file(path, "\x93NUMPY", 6);
    fuzz_temp_path("shard-0-of-1.json", manifest_path, sizeof manifest_path);
}

/* A message: not empty, and NUL-terminated within its buffer (ASan). */
static void check_message(const char *message)
{
    if (message[0] == '\0' || strlen(message) == 0)
        abort();
}

/* The reader's own message, one line with no control character: it shows an input byte as
 * \xHH unless it is printable ASCII. (Messages of manifest.c may quote a manifest's strings;
 * gather escapes those where it prints them.) */
static void check_parse_message(const char *message)
{
    check_message(message);
    for (const unsigned char *c = (const unsigned char *)message; *c != '\0'; c++)
        if (*c < 0x20 || *c == 0x7f)
            abort();
}

static void check_problem(void *ctx, const char *message)
{
    (void)ctx;
    check_message(message);
}

/* The tree against json_read.h: strings NUL-terminated, containers' items (and an object's
 * keys) there, an integer exactly its number. Bounded by the reader's nesting limit. */
static void check_tree(const struct json_value *v)
{
    switch (v->type) {
    case JSON_NULL: break;
    case JSON_BOOL:
        if (v->boolean != 0 && v->boolean != 1)
            abort();
        break;
    case JSON_NUMBER:
        if (isnan(v->number) || (v->is_integer && (double)v->integer != v->number))
            abort();
        break;
    case JSON_STRING:
        if (v->string == NULL)
            abort();
        (void)strlen(v->string); /* ASan: within its allocation */
        break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        if (v->count < 0 || (v->count > 0 && v->items == NULL) ||
            (v->type == JSON_OBJECT && v->count > 0 && v->keys == NULL))
            abort();
        for (int i = 0; i < v->count; i++) {
            if (v->type == JSON_OBJECT &&
                (v->keys[i] == NULL || json_member(v, v->keys[i]) == NULL))
                abort();
            check_tree(&v->items[i]);
        }
        break;
    default: abort();
    }
}

/* The text in memory, `size` bytes and no NUL after them: the reader must not look past. */
static int parse_in_memory(const uint8_t *data, size_t size)
{
    char *text = malloc(size > 0 ? size : 1);
    if (text == NULL)
        abort();
    memcpy(text, data, size);
    struct json_value root;
    char err[512] = "";
    int rc = json_parse(text, size, &root, err, sizeof err);
    if (rc == 0)
        check_tree(&root);
    else if (rc != -1 || strncmp(err, "line ", 5) != 0)
        abort();
    else
        check_parse_message(err);
    json_value_free(&root);
    free(text);
    return rc;
}

/* The text as a manifest read back: its members, the comparison with itself, its files. */
static void read_as_manifest(const uint8_t *data, size_t size)
{
    fuzz_write_file(manifest_path, data, size);
    struct manifest_doc d;
    char err[1024] = "";
    if (manifest_read(manifest_path, &d, err, sizeof err) != 0) {
        check_message(err);
        manifest_doc_free(&d);
        return;
    }
    if (d.pipeline == NULL || d.pipeline_sha256 == NULL || d.status == NULL ||
        d.sets->type != JSON_ARRAY || d.runs->type != JSON_ARRAY || d.index < 0 ||
        d.index >= d.count)
        abort();
    char why[512] = "";
    if (!manifest_same_set(&d, d.pipeline_sha256, d.sets, NULL, 0, d.run_count, d.count, why,
                           sizeof why))
        check_message(why);
    struct manifest_file_counts counts;
    int problems = manifest_check_files(&d, output_dir, check_problem, NULL, &counts);
    /* Each file listed is intact or has its problem: gather's summary adds them up. */
    if (problems < 0 || counts.intact + problems != counts.files)
        abort();
    manifest_doc_free(&d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_small_stack();
    make_output_dir();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (parse_in_memory(data, size) == 0)
        read_as_manifest(data, size);
    return 0;
}
