/* test_gemm_slabs.c — a GEMM cut along K into slabs (gemm_launch.c's gemm_k_slabs, for the cut
 * across devices to come), each launch carrying its sums to the next through a scratch
 * (gemm_plan.carry, the kernels' -DCARRY builds): C is the one-launch result bit for bit, at
 * awkward sizes, in f32 and f64, both storage orders of C, transposed operands, beta 0 (C never
 * read) and not, for several counts of slabs, and the slabs did run (every kernel of the engine
 * carries: gemm.cl here on PoCL; gemm_simt and gemm_mma on NVIDIA GPUs of compute capability 8.0
 * and later). */
#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clops.h"
#include "entry.h"
#include "error.h"
#include "ops/gemm_impl.h"
#include "testutil.h"

static const struct clops_api *api;

static void setup(void)
{
    api = entry_table(CLOPS_ABI_MAJOR);
}

struct slab_case {
    int64_t m, n, k;
    int trans_a, trans_b, column_major;
    double alpha, beta;
};

/* K from one step to many (the portable kernels' TILE_K is 8 to 32), primes, M and N not
 * multiples of the tiles, and shapes of one row or column. */
static const struct slab_case cases[] = {
    {1, 1, 1, 0, 0, 0, 1.0, 0.0},      {7, 5, 67, 0, 0, 0, 1.0, 0.0},
    {37, 129, 301, 1, 0, 0, 0.5, 0.0}, {130, 67, 1000, 0, 1, 1, 1.0, 0.25},
    {257, 3, 129, 1, 1, 0, -2.0, 1.0}, {1, 211, 523, 0, 0, 1, 1.0, -1.5},
    {64, 64, 1031, 0, 0, 0, 1.0, 0.0}, {97, 1, 2048, 1, 0, 1, 3.0, 0.5},
};
enum { CASES = sizeof cases / sizeof cases[0] };
static const int slab_counts[] = {2, 3, 7, 1000};

/* One call of case `c` into a copy of c0, returned (malloc'd). */
static void *run_case(struct clops_pool *pool, const struct slab_case *c, int32_t dtype,
                      const void *a, const void *b, const void *c0)
{
    const size_t es = dtype == CLOPS_F64 ? sizeof(double) : sizeof(float);
    const int64_t ar = c->trans_a ? c->k : c->m, ac = c->trans_a ? c->m : c->k;
    const int64_t br = c->trans_b ? c->n : c->k, bc = c->trans_b ? c->k : c->n;
    void *out = malloc((size_t)(c->m * c->n) * es);
    ck_assert_ptr_nonnull(out);
    memcpy(out, c0, (size_t)(c->m * c->n) * es);
    /* A and B row-major, C in the case's order (its leading dimension the packed one). */
    struct clops_tensor ta = clops_matrix((void *)a, dtype, ar, ac, ac, 0);
    struct clops_tensor tb = clops_matrix((void *)b, dtype, br, bc, bc, 0);
    struct clops_tensor tc =
        clops_matrix(out, dtype, c->m, c->n, c->column_major ? c->m : c->n, c->column_major);
    clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
    const int32_t status = gemm(pool, &ta, &tb, &tc, c->trans_a ? CLOPS_TRANS : CLOPS_NO_TRANS,
                                c->trans_b ? CLOPS_TRANS : CLOPS_NO_TRANS, c->alpha, c->beta);
    ck_assert_msg(status == CLOPS_OK, "gemm: %s", api->last_error());
    return out;
}

/* Element (i, j) of C from the case's operands in long double, for a sanity check of the bits
 * both runs agree on. */
static long double reference(const struct slab_case *c, int32_t dtype, const void *a, const void *b,
                             const void *c0, int64_t i, int64_t j)
{
    const int64_t ac = c->trans_a ? c->m : c->k, bc = c->trans_b ? c->k : c->n;
    long double sum = 0;
    for (int64_t k = 0; k < c->k; k++) {
        const int64_t ai = c->trans_a ? k * ac + i : i * ac + k;
        const int64_t bi = c->trans_b ? j * bc + k : k * bc + j;
        sum += dtype == CLOPS_F64 ? (long double)((const double *)a)[ai] * ((const double *)b)[bi]
                                  : (long double)((const float *)a)[ai] * ((const float *)b)[bi];
    }
    const int64_t ci = c->column_major ? j * c->m + i : i * c->n + j;
    const long double old = dtype == CLOPS_F64 ? ((const double *)c0)[ci] : ((const float *)c0)[ci];
    return c->alpha * sum + (c->beta != 0.0 ? c->beta * old : 0.0L);
}

START_TEST(test_slabs_of_k_give_the_bits_of_one_launch)
{
    const struct slab_case *c = &cases[_i % CASES];
    const int32_t dtype = _i / CASES == 0 ? CLOPS_F32 : CLOPS_F64;
    struct clops_pool *pool = NULL;
    ck_assert_int_eq(api->pool_create_from_string("", &pool), CLOPS_OK);
    const int64_t ar = c->trans_a ? c->k : c->m, ac = c->trans_a ? c->m : c->k;
    void *a = tu_random_elements(dtype, ar * ac), *b = tu_random_elements(dtype, c->k * c->n);
    void *c0 = tu_random_elements(dtype, c->m * c->n);
    if (c->beta == 0.0) /* beta 0: C is never read, NaN there must not reach the result */
        for (int64_t e = 0; e < c->m * c->n; e++) {
            if (dtype == CLOPS_F64)
                ((double *)c0)[e] = NAN;
            else
                ((float *)c0)[e] = NAN;
        }
    const size_t bytes = (size_t)(c->m * c->n) * (dtype == CLOPS_F64 ? 8 : 4);
    gemm_k_slabs = 0;
    void *whole = run_case(pool, c, dtype, a, b, c0);
    /* Sanity: the one launch is right (so two identical wrong results cannot pass). */
    const long double tol = dtype == CLOPS_F64 ? 1e-12L : 1e-4L;
    for (int64_t e = 0; e < c->m * c->n; e += 1 + c->m * c->n / 17) {
        const int64_t i = c->column_major ? e % c->m : e / c->n,
                      j = c->column_major ? e / c->m : e % c->n;
        const long double want = reference(c, dtype, a, b, c0, i, j);
        const long double got = dtype == CLOPS_F64 ? ((double *)whole)[e] : ((float *)whole)[e];
        ck_assert_msg(fabsl(got - want) <= tol * (1 + fabsl(want)) * sqrtl((long double)c->k),
                      "C(%lld, %lld) = %Lg, want %Lg", (long long)i, (long long)j, got, want);
    }
    for (size_t s = 0; s < sizeof slab_counts / sizeof slab_counts[0]; s++) {
        gemm_k_slabs = slab_counts[s];
        const long long launched = atomic_load(&gemm_slab_launches);
        void *cut = run_case(pool, c, dtype, a, b, c0);
        ck_assert_msg(memcmp(cut, whole, bytes) == 0,
                      "%lldx%lldx%lld %s in %d slabs: C differs from one launch's", (long long)c->m,
                      (long long)c->n, (long long)c->k, dtype == CLOPS_F64 ? "f64" : "f32",
                      slab_counts[s]);
        const long long slabs = atomic_load(&gemm_slab_launches) - launched;
        /* Slabs run where K holds two steps of the kernel's at least, else one launch. */
        if (c->k >= 64)
            ck_assert_msg(slabs >= 2, "K = %lld in %d slabs: %lld launched", (long long)c->k,
                          slab_counts[s], slabs);
        if (c->k == 1)
            ck_assert_int_eq(slabs, 0);
        free(cut);
    }
    gemm_k_slabs = 0;
    free(whole);
    free(a);
    free(b);
    free(c0);
    api->pool_release(pool);
}
END_TEST

/* A call of enough K is cut into the slabs asked for, on any device (every kernel of the engine
 * carries), in f32 and f64. */
START_TEST(test_a_call_is_cut_into_the_slabs_asked_for)
{
    struct clops_pool *pool = NULL;
    ck_assert_int_eq(api->pool_create_from_string("", &pool), CLOPS_OK);
    const struct slab_case c = {33, 45, 777, 0, 0, 0, 1.0, 0.0};
    const int32_t dtypes[] = {CLOPS_F32, CLOPS_F64};
    for (int d = 0; d < 2; d++) {
        const int32_t dtype = dtypes[d];
        void *a = tu_random_elements(dtype, c.m * c.k), *b = tu_random_elements(dtype, c.k * c.n);
        void *c0 = tu_random_elements(dtype, c.m * c.n);
        gemm_k_slabs = 4;
        const long long launched = atomic_load(&gemm_slab_launches);
        free(run_case(pool, &c, dtype, a, b, c0));
        gemm_k_slabs = 0;
        const long long cut = atomic_load(&gemm_slab_launches) - launched;
        ck_assert_msg(cut == 4, "dtype %d: %lld slabs launched, 4 asked for", (int)dtype, cut);
        free(a);
        free(b);
        free(c0);
    }
    api->pool_release(pool);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("gemm_slabs", setup, NULL),
        TU_LOOP(test_slabs_of_k_give_the_bits_of_one_launch, 2 * CASES),
        TU_TEST(test_a_call_is_cut_into_the_slabs_asked_for),
    };
    return tu_run_tests("gemm_slabs", 600, 1, tests, TU_COUNT(tests));
}
