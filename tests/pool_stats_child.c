/* pool_stats_child.c — run by test_pool as a fresh process: creates a default pool, runs one
 * checked GEMM and prints the pool's program statistics on one line. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

enum { N = 33 };

/* Not tu_api(): Check's assertions only work inside a test runner. */
static const struct clops_api *load_api(void)
{
    const char *path = getenv("CLOPS_LIBRARY");
    void *lib = path != NULL ? dlopen(path, RTLD_NOW) : NULL;
    clops_plugin_entry_fn entry =
        lib != NULL ? (clops_plugin_entry_fn)(uintptr_t)dlsym(lib, "clops_plugin_entry") : NULL;
    return entry != NULL ? entry(CLOPS_ABI_MAJOR) : NULL;
}

int main(void)
{
    const struct clops_api *api = load_api();
    struct clops_pool *pool = NULL;
    if (api == NULL || api->pool_create_default(&pool) != CLOPS_OK) {
        fprintf(stderr, "pool_stats_child: %s\n", api != NULL ? api->last_error() : dlerror());
        return 1;
    }
    static double a[N * N], b[N * N], c[N * N];
    tu_seed(11);
    tu_fill_f64(a, N * N);
    tu_fill_f64(b, N * N);
    struct clops_tensor ta = clops_matrix(a, CLOPS_F64, N, N, N, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F64, N, N, N, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F64, N, N, N, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
    int32_t status = gemm(pool, &ta, &tb, &tc, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0);
    double worst = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            long double ref = 0;
            for (int k = 0; k < N; k++)
                ref += (long double)a[i * N + k] * b[k * N + j];
            double err = fabs((double)(ref - c[i * N + j]));
            worst = err > worst ? err : worst;
        }
    struct clops_stats s = {.struct_size = sizeof s};
    api->pool_stats(pool, &s);
    printf("status=%d built=%lld loaded=%lld rejected=%lld correct=%d\n", (int)status,
           (long long)s.programs_built, (long long)s.programs_loaded, (long long)s.cache_rejected,
           status == CLOPS_OK && worst < 1e-12);
    api->pool_release(pool);
    return 0;
}
