/* build.c — `clops build`: operators' kernels built ahead of time on a pool's devices, into
 * the on-disk cache (the ABI's pool_prebuild), one row per operator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "table.h"
#include "util.h"

enum { BUILD_LIST_MAX = 32 };

/* A usage error as clops.c's: the message with `arg`, then where help is. */
static int build_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "clops: build: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'clops build --help'.\n");
    return CLI_USAGE;
}

/* Splits a comma-separated `list` (modified) into at most BUILD_LIST_MAX words; -1 when it
 * has more. */
static int split_list(char *list, char **words)
{
    int n = 0;
    for (char *save = NULL, *w = strtok_r(list, ",", &save); w != NULL;
         w = strtok_r(NULL, ",", &save)) {
        if (n == BUILD_LIST_MAX)
            return -1;
        words[n++] = w;
    }
    return n;
}

static void add_row(struct table *t, const char *op, const char *dtypes,
                    const struct clops_prebuild_args *a, const char *outcome)
{
    table_row(t);
    table_cell(t, "%s", op);
    table_cell(t, "%s", dtypes);
    if (outcome != NULL) {
        table_cell(t, "%s", outcome);
        return;
    }
    table_cell(t, "%lld", (long long)a->programs_built);
    table_cell(t, "%lld", (long long)a->programs_loaded);
    table_cell(t, "%.1f", (double)a->wall_ns / 1e6);
}

int build_command(struct cli *cli, const struct build_options *o)
{
    const struct clops_api *api = cli->lib.api;
    if (!CLOPS_API_HAS(api, pool_prebuild)) {
        fprintf(stderr, "clops: the libclops loaded (ABI %u.%u) has no pool_prebuild (ABI 1.5)\n",
                (unsigned)api->abi_major, (unsigned)api->abi_minor);
        return CLI_LOAD;
    }
    char *op_text = host_xstrdup(o->ops != NULL ? o->ops : ""),
         *dtype_text = host_xstrdup(o->dtypes != NULL ? o->dtypes : "");
    char *op_words[BUILD_LIST_MAX], *dtype_words[BUILD_LIST_MAX];
    int32_t dtypes[BUILD_LIST_MAX];
    const int op_count = split_list(op_text, op_words),
              dtype_count = split_list(dtype_text, dtype_words);
    int code = CLI_OK;
    if (op_count < 0 || dtype_count < 0)
        code = build_usage("more than %s names in --ops or --dtypes", "32");
    for (int i = 0; code == CLI_OK && i < dtype_count; i++) {
        dtypes[i] = host_dtype_from_name(dtype_words[i]);
        if (dtypes[i] == CLOPS_DTYPE_INVALID)
            code = build_usage("--dtypes: unknown dtype '%s' (f32, f64, i32, u32, u8)",
                               dtype_words[i]);
    }
    for (int i = 0; code == CLI_OK && i < op_count; i++)
        if (api->op_find(op_words[i]) == NULL)
            code = build_usage("--ops: no operator '%s' (clops ops lists them)", op_words[i]);
    struct clops_pool *pool = NULL;
    if (code == CLI_OK) {
        const int32_t status = o->config != NULL ? api->pool_create_from_file(o->config, &pool)
                                                 : api->pool_create_default(&pool);
        if (status != CLOPS_OK)
            code = cli_pool_error(cli, status);
    }
    if (code == CLI_OK) {
        static const struct table_column columns[] = {
            {"operator", TABLE_LEFT}, {"dtypes", TABLE_LEFT}, {"compiled", TABLE_RIGHT},
            {"loaded", TABLE_RIGHT},  {"ms", TABLE_RIGHT},
        };
        struct table t;
        table_init(&t, columns, (int)(sizeof columns / sizeof columns[0]));
        const int32_t total_ops = op_count > 0 ? op_count : api->op_count();
        int built_any = 0;
        for (int32_t i = 0; i < total_ops && code == CLI_OK; i++) {
            const char *name = op_count > 0 ? op_words[i] : api->op_at(i)->name;
            const char *const ops[1] = {name};
            struct clops_prebuild_args a = {.struct_size = sizeof a,
                                            .pool = pool,
                                            .ops = ops,
                                            .op_count = 1,
                                            .dtypes = dtype_count > 0 ? dtypes : NULL,
                                            .dtype_count = dtype_count};
            const int32_t status = api->pool_prebuild(&a);
            const char *shown = o->dtypes != NULL ? o->dtypes : "all it takes";
            if (status == CLOPS_ERR_INVALID_ARGUMENT && dtype_count > 0) {
                add_row(&t, name, shown, &a, "takes none of these dtypes");
                continue;
            }
            if (status != CLOPS_OK) {
                code = cli_library_error(cli, CLI_FAILED);
                break;
            }
            built_any = 1;
            add_row(&t, name, shown, &a, NULL);
        }
        if (code == CLI_OK && !built_any)
            code = build_usage("%s", "no operator named takes any dtype named");
        if (code == CLI_OK) {
            struct clops_device_info info = {.struct_size = sizeof info};
            api->pool_device_info(pool, 0, &info);
            printf("Kernels built ahead of time on %s%s (pool: %s), into the on-disk cache\n\n",
                   info.name,
                   api->pool_device_count(pool) > 1 ? " and the pool's other devices" : "",
                   o->config != NULL ? o->config : "built-in defaults");
            table_print(&t, stdout, 0);
        }
        table_free(&t);
    }
    if (pool != NULL)
        api->pool_release(pool);
    free(op_text);
    free(dtype_text);
    return code;
}
