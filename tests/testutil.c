/* testutil.c — see testutil.h. */
#include "testutil.h"

#include <check.h>
#include <dlfcn.h>
#include <stdlib.h>

static void *library;
static const struct clops_api *api;
static struct clops_pool *pool;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

void *tu_library(void)
{
    if (library == NULL) {
        const char *path = getenv("CLOPS_LIBRARY");
        ck_assert_msg(path != NULL, "CLOPS_LIBRARY is not set (run the tests through ctest)");
        library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        ck_assert_msg(library != NULL, "dlopen(%s): %s", path, dlerror());
    }
    return library;
}

const struct clops_api *tu_api(void)
{
    if (api == NULL) {
        clops_plugin_entry_fn entry =
            (clops_plugin_entry_fn)(uintptr_t)dlsym(tu_library(), "clops_plugin_entry");
        ck_assert_msg(entry != NULL, "clops_plugin_entry not found: %s", dlerror());
        api = entry(CLOPS_ABI_MAJOR);
        ck_assert_ptr_nonnull(api);
        ck_assert_uint_ge(api->struct_size, sizeof(struct clops_api));
    }
    return api;
}

struct clops_pool *tu_pool(void)
{
    if (pool == NULL) {
        int32_t status = tu_api()->pool_create_default(&pool);
        ck_assert_msg(status == CLOPS_OK, "pool_create_default: %s", tu_api()->last_error());
    }
    return pool;
}

void tu_seed(uint64_t seed)
{
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
}

double tu_uniform(void)
{
    /* xorshift64*: fresh, reproducible inputs without libc's rand() state. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1Dull;
    return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

void tu_fill_f32(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)tu_uniform();
}

void tu_fill_f64(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = tu_uniform();
}

int tu_run_suite(Suite *suite, int fork)
{
    SRunner *runner = srunner_create(suite);
    if (!fork)
        srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
