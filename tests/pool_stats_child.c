/* pool_stats_child.c — run by test_pool as a fresh process: creates a default pool, runs one
 * checked GEMM and prints the pool's program statistics on one line. */
#include <stdio.h>

#include "testutil.h"

enum { N = 33 };

int main(void)
{
    const struct clops_api *api = tu_api_or_null();
    struct clops_pool *pool = NULL;
    if (api == NULL || api->pool_create_default(&pool) != CLOPS_OK) {
        fprintf(stderr, "pool_stats_child: %s\n",
                api != NULL ? api->last_error() : "cannot load $CLOPS_LIBRARY");
        return 1;
    }
    int32_t status = CLOPS_OK;
    double worst = tu_checked_gemm(api, pool, N, 11, &status);
    struct clops_stats s = {.struct_size = sizeof s};
    api->pool_stats(pool, &s);
    printf("status=%d built=%lld loaded=%lld rejected=%lld correct=%d\n", (int)status,
           (long long)s.programs_built, (long long)s.programs_loaded, (long long)s.cache_rejected,
           status == CLOPS_OK && worst >= 0 && worst < 1e-12);
    api->pool_release(pool);
    return 0;
}
