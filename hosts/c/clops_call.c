/* clops_call.c — clops-call runs any clops operator by name with arguments from the command line:
 * the reference host for workflow engines (loading, ABI checks, text arguments typed by the
 * operator's descriptor, invoke()). It includes abi/clops.h and
 * the hosts' loader (hosts/common/loader.h); libclops is never linked. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clops.h"
#include "host_os.h"
#include "loader.h"

static const char usage[] =
    "usage: clops-call [--config FILE] [--print NAME]... OPERATOR NAME=VALUE...\n"
    "       clops-call --list                     (options may come anywhere)\n"
    "Runs OPERATOR through invoke(); parameters left out take their defaults.\n"
    "VALUE, by the parameter's kind in the descriptor (clops-call --list):\n"
    "  tensor  @PATH:DTYPE:SHAPE        raw row-major file in native byte order; written back\n"
    "                                   (atomically) after the call for out/inout parameters;\n"
    "                                   an out file that does not exist yet starts as zeros\n"
    "          zeros:DTYPE:SHAPE        a zero-filled tensor\n"
    "          random:DTYPE:SHAPE[:seed=N]  floats uniform in [-1, 1), integers in 0..9\n"
    "          DTYPE: f32 f64 i32 u32 u8 i64; SHAPE: 3x4, 5 or 2x3x4 (up to rank 4)\n"
    "  int64 and double: a number; enum: one of its values; string: the text\n"
    "--print NAME   prints tensor NAME after the call (one row per line)\n"
    "--config FILE  creates the pool from FILE instead of the built-in defaults\n"
    "Exit status: 0 success, 1 the call failed, 2 usage error, 3 libclops not loadable.\n";

enum { EXIT_CALL = 1, EXIT_USAGE = 2, EXIT_LIBRARY = 3 };

static const char *const dtype_names[] = {"", "f32", "f64", "i32", "u32", "u8", "i64"};
static const int64_t dtype_sizes[] = {0, 4, 8, 4, 4, 1, 8};

/* A tensor argument: its descriptor, its host memory (owned here), its file (NULL: generated). */
struct host_tensor {
    const char *name;
    struct clops_tensor t;
    int64_t count, bytes;
    char *path;
    int32_t kind; /* the parameter's kind: TENSOR_IN/OUT/INOUT */
};

/* The plugin, found by the rule every clops host follows (hosts/common/loader.h: $CLOPS_LIBRARY,
 * else the plugin beside this program, else the installed one). The loader checks that the table
 * serves our ABI major and holds the last member we call (invoke): a shorter table comes from a
 * plugin older than our header. */
static const struct clops_api *load_clops(void)
{
    static struct host_library lib; /* stays loaded until the process exits */
    char why[8192];
    if (host_library_load(&lib, why, sizeof why) != 0) {
        fprintf(stderr, "clops-call: cannot load libclops: %s\n", why);
        return NULL;
    }
    return lib.api;
}

/* One line per operator, written as a call: required parameters, then [optional=default]. */
static void list_ops(const struct clops_api *api)
{
    for (int32_t i = 0; i < api->op_count(); i++) {
        const struct clops_op *op = api->op_at(i);
        printf("%s", op->name);
        for (int32_t k = 0; k < op->param_count; k++) {
            const struct clops_param *p = &op->params[k];
            if (p->default_value == NULL)
                printf(" %s", p->name);
            else
                printf(" [%s=%s]", p->name, p->default_value);
        }
        printf("\n    %s\n", op->summary);
    }
}

static int32_t dtype_from_name(const char *name)
{
    for (int32_t d = 1; d <= CLOPS_I64; d++)
        if (strcmp(name, dtype_names[d]) == 0)
            return d;
    return CLOPS_DTYPE_INVALID;
}

/* "3x4" -> rank 2, shape {3, 4}, row-major strides {4, 1}. Returns the number of elements, or
 * -1 if malformed. */
static int64_t parse_shape(const char *text, struct clops_tensor *t)
{
    const char *s = text;
    t->rank = 0;
    while (t->rank < CLOPS_MAX_RANK) {
        char *end;
        errno = 0;
        long long n = strtoll(s, &end, 10);
        if (end == s || n < 0 || errno != 0)
            return -1;
        t->shape[t->rank++] = n;
        if (*end == '\0')
            break;
        if (*end != 'x')
            return -1;
        s = end + 1;
    }
    if (*s == '\0' || t->rank == 0)
        return -1;
    int64_t stride = 1, count = 1;
    for (int32_t k = t->rank - 1; k >= 0; k--) {
        t->strides[k] = stride;
        stride *= t->shape[k] > 0 ? t->shape[k] : 1;
        count *= t->shape[k];
    }
    return count;
}

/* splitmix64: the same seed gives the same tensor on every machine. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void fill_random(struct host_tensor *h, uint64_t seed)
{
    for (int64_t i = 0; i < h->count; i++) {
        uint64_t r = next_random(&seed);
        double u = (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0;
        void *d = h->t.data;
        switch (h->t.dtype) {
        case CLOPS_F32: ((float *)d)[i] = (float)u; break;
        case CLOPS_F64: ((double *)d)[i] = u; break;
        case CLOPS_I32: ((int32_t *)d)[i] = (int32_t)(r % 10); break;
        case CLOPS_U32: ((uint32_t *)d)[i] = (uint32_t)(r % 10); break;
        case CLOPS_U8: ((uint8_t *)d)[i] = (uint8_t)(r % 10); break;
        default: ((int64_t *)d)[i] = (int64_t)(r % 10); break;
        }
    }
}

/* Reads PATH into the tensor's memory; its size must be exactly the tensor's. A missing file is
 * fine for an out parameter, which the call fills. */
static int read_file(struct host_tensor *h)
{
    FILE *f = fopen(h->path, "rb");
    if (f == NULL && errno == ENOENT && h->kind == CLOPS_PARAM_TENSOR_OUT)
        return 0;
    if (f == NULL) {
        fprintf(stderr, "clops-call: %s: %s: %s\n", h->name, h->path, strerror(errno));
        return -1;
    }
    size_t got = fread(h->t.data, 1, (size_t)h->bytes, f);
    int longer = fgetc(f) != EOF;
    fclose(f);
    if (got == (size_t)h->bytes && !longer)
        return 0;
    fprintf(stderr, "clops-call: %s: %s is not %lld bytes, as dtype and shape say\n", h->name,
            h->path, (long long)h->bytes);
    return -1;
}

/* Writes into a temporary file next to PATH, then renames it over PATH, so that a reader (or a
 * workflow engine's next step) never sees a half-written result. */
static int write_file_atomically(const struct host_tensor *h)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", h->path) >= (int)sizeof tmp)
        return -1;
    FILE *f = host_create_temp(tmp);
    int ok = f != NULL && fwrite(h->t.data, 1, (size_t)h->bytes, f) == (size_t)h->bytes;
    ok = f != NULL && fclose(f) == 0 && ok;
    ok = ok && host_replace_file(tmp, h->path) == 0;
    if (!ok && f != NULL)
        remove(tmp);
    return ok ? 0 : -1;
}

/* Parses a tensor VALUE (see usage) into `h`, allocating and filling its memory. */
static int parse_tensor(const char *value, struct host_tensor *h)
{
    char *spec = strdup(value), *source = spec, *dtype = NULL, *shape = NULL, *seed = NULL;
    if (spec == NULL)
        return -1;
    if (spec[0] == '@') { /* the path may hold ':', so dtype and shape are taken from the end */
        shape = strrchr(spec, ':');
        if (shape != NULL) {
            *shape++ = '\0';
            dtype = strrchr(spec, ':');
            if (dtype != NULL)
                *dtype++ = '\0';
        }
        h->path = strdup(spec + 1);
    } else {
        strtok(spec, ":");
        dtype = strtok(NULL, ":");
        shape = strtok(NULL, ":");
        seed = strtok(NULL, "");
    }
    int is_random = strcmp(source, "random") == 0;
    char *end = NULL;
    uint64_t seed_value = seed != NULL ? strtoull(seed + 5, &end, 0) : 1;
    int ok = dtype != NULL && shape != NULL &&
             (h->path != NULL || is_random || strcmp(source, "zeros") == 0) &&
             (seed == NULL ||
              (is_random && strncmp(seed, "seed=", 5) == 0 && end != seed + 5 && *end == '\0'));
    h->t.dtype = ok ? dtype_from_name(dtype) : CLOPS_DTYPE_INVALID;
    ok = h->t.dtype != CLOPS_DTYPE_INVALID && (h->count = parse_shape(shape, &h->t)) >= 0;
    free(spec);
    if (!ok) {
        fprintf(stderr, "clops-call: %s=%s: expected @PATH|zeros|random:DTYPE:SHAPE[:seed=N]\n",
                h->name, value);
        return -1;
    }
    h->bytes = h->count * dtype_sizes[h->t.dtype];
    h->t.data = calloc((size_t)h->count + 1, (size_t)dtype_sizes[h->t.dtype]);
    if (h->t.data == NULL) {
        fprintf(stderr, "clops-call: %s: out of memory\n", h->name);
        return -1;
    }
    if (is_random)
        fill_random(h, seed_value);
    return h->path != NULL ? read_file(h) : 0;
}

/* Turns NAME=VALUE into an argument by the kind of the parameter NAME. An unknown name is
 * passed on as a string, so that invoke() reports it with the operator's parameter list. */
static int parse_arg(const struct clops_op *op, char *text, struct clops_arg *arg,
                     struct host_tensor *h)
{
    char *value = strchr(text, '=');
    if (value == NULL) {
        fprintf(stderr, "clops-call: '%s': expected NAME=VALUE\n", text);
        return -1;
    }
    *value++ = '\0';
    *arg = (struct clops_arg){.name = text, .kind = CLOPS_PARAM_STRING, .s = value};
    for (int32_t k = 0; k < op->param_count; k++)
        if (strcmp(op->params[k].name, text) == 0)
            arg->kind = op->params[k].kind;
    char *end = value;
    errno = 0;
    switch (arg->kind) {
    case CLOPS_PARAM_INT64: arg->i = strtoll(value, &end, 0); break;
    case CLOPS_PARAM_DOUBLE: arg->d = strtod(value, &end); break;
    case CLOPS_PARAM_ENUM: /* the enum's value as text: invoke() checks it */
    case CLOPS_PARAM_STRING: return 0;
    default:
        h->name = text;
        h->kind = arg->kind;
        arg->tensor = &h->t;
        return parse_tensor(value, h);
    }
    if (end == value || *end != '\0' || errno != 0) {
        fprintf(stderr, "clops-call: %s=%s: expected a%s number\n", text, value,
                arg->kind == CLOPS_PARAM_INT64 ? "n integer" : "");
        return -1;
    }
    return 0;
}

static void print_element(const struct clops_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case CLOPS_F32: printf(" %.9g", ((const float *)d)[i]); break;
    case CLOPS_F64: printf(" %.17g", ((const double *)d)[i]); break;
    case CLOPS_I32: printf(" %d", ((const int32_t *)d)[i]); break;
    case CLOPS_U32: printf(" %u", ((const uint32_t *)d)[i]); break;
    case CLOPS_U8: printf(" %u", ((const uint8_t *)d)[i]); break;
    default: printf(" %lld", (long long)((const int64_t *)d)[i]); break;
    }
}

/* "c = f64 3x2", then one line per row (the last axis); round-trip precision. */
static void print_tensor(const struct host_tensor *h)
{
    printf("%s = %s ", h->name, dtype_names[h->t.dtype]);
    for (int32_t k = 0; k < h->t.rank; k++)
        printf("%s%lld", k ? "x" : "", (long long)h->t.shape[k]);
    int64_t row = h->t.shape[h->t.rank - 1];
    for (int64_t i = 0; i < h->count; i++) {
        if (row == 0 || i % row == 0)
            printf("\n");
        print_element(&h->t, i);
    }
    printf("\n");
}

/* The index of the tensor argument `name`, or -1. */
static int find_tensor(const struct clops_arg *args, int nargs, const char *name)
{
    for (int k = 0; k < nargs; k++)
        if (args[k].tensor != NULL && strcmp(args[k].name, name) == 0)
            return k;
    return -1;
}

/* Parses the arguments, creates a pool, calls the operator, then writes back and prints. */
static int call_operator(const struct clops_api *api, const struct clops_op *op, int nargs,
                         char **texts, struct clops_arg *args, struct host_tensor *tensors,
                         const char *config, const char **prints, int nprints)
{
    for (int k = 0; k < nargs; k++)
        if (parse_arg(op, texts[k], &args[k], &tensors[k]) != 0)
            return EXIT_USAGE;
    for (int p = 0; p < nprints; p++)
        if (find_tensor(args, nargs, prints[p]) < 0) {
            fprintf(stderr, "clops-call: --print %s: no tensor argument of that name\n", prints[p]);
            return EXIT_USAGE;
        }

    struct clops_pool *pool = NULL;
    int32_t status = config != NULL ? api->pool_create_from_file(config, &pool)
                                    : api->pool_create_default(&pool);
    if (status == CLOPS_OK)
        status = api->invoke(pool, op, args, (int32_t)nargs);
    if (status != CLOPS_OK) { /* last_error() is valid until the next call: it comes last */
        const char *name = api->status_name(status);
        fprintf(stderr, "clops-call: %s: %s\n", name, api->last_error());
    }
    api->pool_release(pool);
    if (status != CLOPS_OK)
        return EXIT_CALL;

    int failed = 0;
    for (int k = 0; k < nargs; k++) {
        const struct host_tensor *h = &tensors[k];
        if (h->path != NULL && h->kind != CLOPS_PARAM_TENSOR_IN && write_file_atomically(h) != 0) {
            fprintf(stderr, "clops-call: cannot write %s: %s\n", h->path, strerror(errno));
            failed = 1;
        }
    }
    for (int p = 0; p < nprints; p++)
        print_tensor(&tensors[find_tensor(args, nargs, prints[p])]);
    return failed ? EXIT_CALL : 0;
}

int main(int argc, char **argv)
{
    /* Options may come anywhere; the rest (OPERATOR NAME=VALUE...) is packed into `words`. */
    const char *config = NULL, **prints = calloc((size_t)argc, sizeof *prints);
    char **words = calloc((size_t)argc, sizeof *words);
    int nprints = 0, nwords = 0, list = 0, help = 0, bad = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--list") == 0)
            list = 1;
        else if (strcmp(argv[a], "--help") == 0)
            help = 1;
        else if (strcmp(argv[a], "--print") == 0 && a + 1 < argc)
            prints[nprints++] = argv[++a];
        else if (strcmp(argv[a], "--config") == 0 && a + 1 < argc)
            config = argv[++a];
        else if (argv[a][0] == '-')
            bad = 1;
        else
            words[nwords++] = argv[a];
    }
    const struct clops_api *api = NULL;
    int rc = 0;
    if (help || bad || (!list && nwords == 0)) {
        fputs(usage, help ? stdout : stderr);
        rc = help ? 0 : EXIT_USAGE;
    } else if ((api = load_clops()) == NULL) {
        rc = EXIT_LIBRARY;
    } else if (list) {
        list_ops(api);
    } else if (api->op_find(words[0]) == NULL) {
        fprintf(stderr, "clops-call: %s (clops-call --list shows them)\n", api->last_error());
        rc = EXIT_USAGE;
    } else {
        int nargs = nwords - 1;
        struct clops_arg *args = calloc((size_t)nwords, sizeof *args);
        struct host_tensor *tensors = calloc((size_t)nwords, sizeof *tensors);
        rc = call_operator(api, api->op_find(words[0]), nargs, words + 1, args, tensors, config,
                           prints, nprints);
        for (int k = 0; k < nargs; k++) {
            free(tensors[k].t.data);
            free(tensors[k].path);
        }
        free(args);
        free(tensors);
    }
    free(words);
    free(prints);
    return rc; /* the library stays loaded until the process exits */
}
