/* clops_lapack.c — a drop-in subset of BLAS/LAPACK (gemm, getrf, getrs, gesv, cblas gemm) that
 * runs on clops: LAPACK's argument checks, quick returns and results, with clops loaded by
 * dlopen on the first call that has work to do. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clops.h"
#include "loader.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- Interfaces -----------------------------------------------------------------------------
 * Every routine is exported in two integer widths: LP64 (`dgemm_`, INTEGER = int32_t, as the
 * reference libraries) and ILP64 (`dgemm_64_`, INTEGER = int64_t, the suffix of OpenBLAS's and
 * libblastrampoline's 64-bit interface, which Julia calls). One implementation serves both: the
 * entry points widen their integers to int64_t, and only xerbla, ipiv and the host fallback see
 * the caller's width. */
enum width { LP64, ILP64 };

/* ---- xerbla: LAPACK's error handler ---------------------------------------------------------
 * Weak, so that a program's own xerbla_ (xerbla_64_) replaces it (calls to it go through the
 * PLT). Unlike the reference XERBLA, which STOPs, it returns, as OpenBLAS's and MKL's do: the
 * routine then returns with INFO = -position. */
static void print_illegal_value(const char *srname, size_t srname_len, int64_t position)
{
    int len = (int)strnlen(srname, srname_len);
    while (len > 0 && srname[len - 1] == ' ')
        len--;
    fprintf(stderr, "** On entry to %.*s parameter number %lld had an illegal value\n", len, srname,
            (long long)position);
}

EXPORT __attribute__((weak)) void xerbla_(const char *srname, const int *info, size_t srname_len)
{
    print_illegal_value(srname, srname_len, *info);
}

EXPORT __attribute__((weak)) void xerbla_64_(const char *srname, const int64_t *info,
                                             size_t srname_len)
{
    print_illegal_value(srname, srname_len, *info);
}

/* LAPACK names routines padded to 6 characters ('DGEMM ', 'DGESV '), as xerbla receives them. */
static void report_illegal(const char *srname, enum width w, int64_t position)
{
    if (w == ILP64) {
        xerbla_64_(srname, &position, strlen(srname));
    } else {
        const int info = (int)position;
        xerbla_(srname, &info, strlen(srname));
    }
}

/* ---- Configuration and host fallbacks (the next BLAS/LAPACK in the lookup order) ---------- */

enum routine { SGEMM, DGEMM, SGETRF, DGETRF, SGETRS, DGETRS, SGESV, DGESV, ROUTINE_COUNT };

static const struct {
    const char *symbol; /* LP64; ILP64 appends "64_" */
    const char *srname; /* LAPACK's name, as xerbla receives it */
    int32_t dtype;
} routines[ROUTINE_COUNT] = {
    {"sgemm_", "SGEMM ", CLOPS_F32},  {"dgemm_", "DGEMM ", CLOPS_F64},
    {"sgetrf_", "SGETRF", CLOPS_F32}, {"dgetrf_", "DGETRF", CLOPS_F64},
    {"sgetrs_", "SGETRS", CLOPS_F32}, {"dgetrs_", "DGETRS", CLOPS_F64},
    {"sgesv_", "SGESV ", CLOPS_F32},  {"dgesv_", "DGESV ", CLOPS_F64},
};

static struct {
    pthread_once_t once;
    uint64_t offload_min; /* CLOPS_LAPACK_OFFLOAD_MIN: fewer matrix elements stay on the host */
    void (*host[2][ROUTINE_COUNT])(void); /* [enum width][enum routine] */
} config = {.once = PTHREAD_ONCE_INIT};

/* CLOPS_LAPACK_OFFLOAD_MIN, a decimal number of matrix elements; 0 (every call offloaded) when
 * unset or empty. Anything else (abc, 12x, -5, past 2^64 - 1) is not half-read: the default
 * holds and stderr says so, once (config_init runs once), the drop-in's channel for its other
 * problems too, since inside another program it must not end it. */
static uint64_t offload_min_from_env(void)
{
    const char *text = getenv("CLOPS_LAPACK_OFFLOAD_MIN");
    if (text == NULL || text[0] == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    const unsigned long long value = strtoull(text, &end, 10);
    if (isdigit((unsigned char)text[0]) && *end == '\0' && errno == 0)
        return value;
    fprintf(stderr,
            "clops_lapack: CLOPS_LAPACK_OFFLOAD_MIN = '%s': expected a number of matrix elements "
            "from 0 to %llu; using the default, 0 (every call runs in clops)\n",
            text, ULLONG_MAX);
    return 0;
}

static void config_init(void)
{
    config.offload_min = offload_min_from_env();
    for (int i = 0; i < ROUTINE_COUNT; i++) {
        char ilp64[32];
        snprintf(ilp64, sizeof ilp64, "%s64_", routines[i].symbol);
        /* POSIX guarantees a data pointer from dlsym() converts to a function pointer. */
        config.host[LP64][i] = (void (*)(void))dlsym(RTLD_NEXT, routines[i].symbol);
        config.host[ILP64][i] = (void (*)(void))dlsym(RTLD_NEXT, ilp64);
    }
}

/* The host routine to run instead of clops for a call of `elements` matrix elements, or NULL. */
static void (*host_for_small(enum routine r, enum width w, uint64_t elements))(void)
{
    pthread_once(&config.once, config_init);
    return elements < config.offload_min ? config.host[w][r] : NULL;
}

static void (*host_routine(enum routine r, enum width w))(void)
{
    pthread_once(&config.once, config_init);
    return config.host[w][r];
}

/* ---- clops: loaded once, on the first call with work to do --------------------------------- */

static struct {
    pthread_once_t once;
    struct host_library lib;
    struct clops_pool *pool; /* NULL when clops could not be loaded or no pool opened */
    const struct clops_op *gemm, *lu, *solve, *lu_solve;
    atomic_int reported; /* whether a clops failure was printed */
    atomic_int loaded;   /* set once clops_init has run: pool etc. are readable */
} clops = {.once = PTHREAD_ONCE_INIT};

/* The first clops failure is printed, later ones are not: a program calling dgemm in a loop
 * on a machine without a device should not flood stderr. */
static void report_clops_failure_once(const char *what, const char *detail)
{
    if (atomic_exchange(&clops.reported, 1) != 0)
        return;
    fprintf(stderr,
            "clops_lapack: %s: %s (reported once; calls go to the next BLAS/LAPACK in the link "
            "order where there is one)\n",
            what, detail);
}

static void print_stats(void);

static void clops_init(void)
{
    char why[2048];
    if (host_library_load(&clops.lib, why, sizeof why) != 0) {
        report_clops_failure_once("cannot load libclops", why);
        return;
    }
    const struct clops_api *api = clops.lib.api;
    clops.gemm = api->op_find("gemm");
    clops.lu = api->op_find("lu");
    clops.solve = api->op_find("solve");
    clops.lu_solve = api->op_find("lu_solve");
    if (!clops.gemm || !clops.lu || !clops.solve || !clops.lu_solve) {
        report_clops_failure_once(clops.lib.path, "lacks one of gemm, lu, solve, lu_solve");
        return;
    }
    const char *path = getenv("CLOPS_CONFIG");
    struct clops_pool *pool = NULL;
    int32_t status = path != NULL && path[0] != '\0' ? api->pool_create_from_file(path, &pool)
                                                     : api->pool_create_default(&pool);
    if (status != CLOPS_OK) {
        report_clops_failure_once(api->status_name(status), api->last_error());
        return;
    }
    clops.pool = pool;
    const char *stats = getenv("CLOPS_LAPACK_STATS");
    if (stats != NULL && strcmp(stats, "1") == 0)
        atexit(print_stats);
}

/* The pool, loading clops on first use; NULL when clops is unavailable. */
static struct clops_pool *clops_pool(void)
{
    pthread_once(&clops.once, clops_init);
    atomic_store(&clops.loaded, 1);
    return clops.pool;
}

static void report_clops_error(int32_t status)
{
    const struct clops_api *api = clops.lib.api;
    report_clops_failure_once(api->status_name(status), api->last_error());
}

/* Operator calls of our pool that succeeded: the pool is ours alone, so these are exactly the
 * BLAS/LAPACK calls that ran in clops. */
EXPORT int clops_lapack_calls(void)
{
    /* Never loads clops: before the first offloaded call, nothing ran there. */
    if (!atomic_load(&clops.loaded) || clops.pool == NULL)
        return 0;
    const struct clops_api *api = clops.lib.api;
    int64_t done = 0;
    for (int32_t i = 0; i < api->op_count(); i++) {
        struct clops_op_stats st = {.struct_size = sizeof st};
        if (api->pool_op_stats(clops.pool, i, &st) == CLOPS_OK)
            done += st.calls - st.failures;
    }
    return (int)done;
}

static void print_stats(void)
{
    struct clops_stats st = {.struct_size = sizeof st};
    clops.lib.api->pool_stats(clops.pool, &st);
    fprintf(stderr,
            "clops_lapack: %d calls ran in clops (%s); pool: %lld operator calls, %lld bytes "
            "uploaded, %lld downloaded\n",
            clops_lapack_calls(), clops.lib.path, (long long)st.calls, (long long)st.bytes_uploaded,
            (long long)st.bytes_downloaded);
}

/* ---- Shared helpers ------------------------------------------------------------------------- */

static int lsame(char c, char upper)
{
    return c == upper || c == upper + ('a' - 'A');
}

static int64_t max1(int64_t x)
{
    return x > 1 ? x : 1;
}

/* A column-major Fortran matrix as a clops tensor: strides {1, ld}, no copy. */
static struct clops_tensor fortran_matrix(const void *data, int32_t dtype, int64_t rows,
                                          int64_t cols, int64_t ld)
{
    return clops_matrix((void *)data, dtype, rows, cols, ld, 1);
}

static struct clops_tensor i32_vector(int32_t *data, int64_t n)
{
    struct clops_tensor t = {.data = data, .dtype = CLOPS_I32, .rank = 1};
    t.shape[0] = n;
    t.strides[0] = 1;
    return t;
}

/* What a routine did: finished (also on errors and quick returns), or left the work to the host
 * routine because the call is small, clops failed, or clops cannot take it. */
enum outcome { DONE, RUN_ON_HOST };

/* INFO for a call clops could not run, outside LAPACK's range: -1000 - enum clops_status. */
static int64_t info_for_clops_failure(int32_t status)
{
    return -1000 - (int64_t)status;
}

/* clops's kernels index in 32 bits and its pivots are int32, so an ILP64 call with an integer
 * argument beyond INT32_MAX (a call the LP64 interface could not even express) is one it
 * cannot take. Returns the position of the first such argument, in LAPACK's order, or 0. */
static int64_t position_beyond_int32(int count, const int64_t values[], const int positions[])
{
    for (int i = 0; i < count; i++)
        if (values[i] > INT32_MAX)
            return positions[i];
    return 0;
}

/* Such a call goes to the next ILP64 library when there is one; otherwise it is reported to
 * xerbla_64_ as an illegal value for this library, with INFO = -position (`info` is NULL for
 * gemm, which has none). */
static enum outcome reject_beyond_int32(enum routine r, int64_t position, int64_t *info)
{
    if (host_routine(r, ILP64) != NULL)
        return RUN_ON_HOST;
    report_illegal(routines[r].srname, ILP64, position);
    if (info != NULL)
        *info = -position;
    return DONE;
}

/* ---- gemm ----------------------------------------------------------------------------------- */

struct gemm_call {
    enum routine routine; /* SGEMM or DGEMM */
    enum width width;
    char transa, transb;
    int64_t m, n, k;
    double alpha, beta;
    const void *a, *b;
    void *c;
    int64_t lda, ldb, ldc;
};

/* Reference BLAS's checks, in its order; returns the bad parameter's position or 0. */
static int gemm_check(const struct gemm_call *g)
{
    const int nota = lsame(g->transa, 'N'), notb = lsame(g->transb, 'N');
    const int64_t nrowa = nota ? g->m : g->k, nrowb = notb ? g->k : g->n;
    if (!nota && !lsame(g->transa, 'C') && !lsame(g->transa, 'T'))
        return 1;
    if (!notb && !lsame(g->transb, 'C') && !lsame(g->transb, 'T'))
        return 2;
    if (g->m < 0)
        return 3;
    if (g->n < 0)
        return 4;
    if (g->k < 0)
        return 5;
    if (g->lda < max1(nrowa))
        return 8;
    if (g->ldb < max1(nrowb))
        return 10;
    if (g->ldc < max1(g->m))
        return 13;
    return 0;
}

/* C = beta C, as the reference does when alpha = 0 or K = 0: A and B are not read, and beta = 0
 * sets C to zero whatever it held. */
static void gemm_scale_c(const struct gemm_call *g)
{
    const int32_t dtype = routines[g->routine].dtype;
    for (int64_t j = 0; j < g->n; j++)
        for (int64_t i = 0; i < g->m; i++) {
            size_t at = (size_t)i + (size_t)j * (size_t)g->ldc;
            if (dtype == CLOPS_F64) {
                double *c = g->c;
                c[at] = g->beta == 0.0 ? 0.0 : g->beta * c[at];
            } else {
                float *c = g->c;
                c[at] = g->beta == 0.0 ? 0.0f : (float)g->beta * c[at];
            }
        }
}

/* Bytes from a column-major matrix's first element to just past its last. */
static size_t matrix_span_bytes(const struct clops_tensor *t)
{
    size_t elements = (size_t)(t->shape[1] - 1) * (size_t)t->strides[1] + (size_t)t->shape[0];
    return elements * (t->dtype == CLOPS_F64 ? sizeof(double) : sizeof(float));
}

/* LAPACK's blocked codes multiply blocks of one array (dgetrf: A22 -= A21 A12, all inside A):
 * no element is shared, but the address ranges interleave, which clops refuses for C (it stages
 * spans). An input whose range meets C's is copied, packed, into `*copy` (freed by the caller);
 * it is O(MK + KN) next to the product's O(MNK). */
static int32_t unshare_input(struct clops_tensor *x, const struct clops_tensor *c, void **copy)
{
    const char *x_lo = x->data, *c_lo = c->data;
    const size_t x_bytes = matrix_span_bytes(x), c_bytes = matrix_span_bytes(c);
    if (!(x_lo < c_lo + c_bytes && c_lo < x_lo + x_bytes))
        return CLOPS_OK;
    const size_t size = x->dtype == CLOPS_F64 ? sizeof(double) : sizeof(float);
    const size_t rows = (size_t)x->shape[0], cols = (size_t)x->shape[1];
    char *packed = malloc(rows * cols * size);
    if (packed == NULL)
        return CLOPS_ERR_OUT_OF_HOST_MEMORY;
    for (size_t j = 0; j < cols; j++)
        memcpy(packed + j * rows * size, x_lo + j * (size_t)x->strides[1] * size, rows * size);
    *x = fortran_matrix(packed, x->dtype, x->shape[0], x->shape[1], x->shape[0]);
    *copy = packed;
    return CLOPS_OK;
}

static enum outcome gemm_run(const struct gemm_call *g)
{
    const enum routine r = g->routine;
    int position = gemm_check(g);
    if (position != 0) {
        report_illegal(routines[r].srname, g->width, position);
        return DONE;
    }
    if (g->m == 0 || g->n == 0 || ((g->alpha == 0.0 || g->k == 0) && g->beta == 1.0))
        return DONE;
    if (g->alpha == 0.0 || g->k == 0) {
        gemm_scale_c(g);
        return DONE;
    }
    const int64_t extents[6] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc};
    const int64_t beyond = position_beyond_int32(6, extents, (const int[6]){3, 4, 5, 8, 10, 13});
    if (beyond != 0)
        return reject_beyond_int32(r, beyond, NULL);
    /* Each product is below 2^62 now, so the sum fits in 64 bits. */
    const uint64_t elements =
        (uint64_t)(g->m * g->n) + (uint64_t)(g->m * g->k) + (uint64_t)(g->k * g->n);
    if (host_for_small(r, g->width, elements) != NULL)
        return RUN_ON_HOST;
    struct clops_pool *pool = clops_pool();
    if (pool == NULL)
        return host_routine(r, g->width) != NULL ? RUN_ON_HOST : DONE;
    const int32_t dtype = routines[r].dtype;
    const int nota = lsame(g->transa, 'N'), notb = lsame(g->transb, 'N');
    struct clops_tensor ta =
        fortran_matrix(g->a, dtype, nota ? g->m : g->k, nota ? g->k : g->m, g->lda);
    struct clops_tensor tb =
        fortran_matrix(g->b, dtype, notb ? g->k : g->n, notb ? g->n : g->k, g->ldb);
    struct clops_tensor tc = fortran_matrix(g->c, dtype, g->m, g->n, g->ldc);
    void *a_copy = NULL, *b_copy = NULL;
    int32_t status = unshare_input(&ta, &tc, &a_copy);
    if (status == CLOPS_OK)
        status = unshare_input(&tb, &tc, &b_copy);
    if (status == CLOPS_OK)
        status = ((clops_gemm_fn)clops.gemm->entry)(
            pool, &ta, &tb, &tc, nota ? CLOPS_NO_TRANS : CLOPS_TRANS,
            notb ? CLOPS_NO_TRANS : CLOPS_TRANS, g->alpha, g->beta);
    free(a_copy);
    free(b_copy);
    if (status == CLOPS_OK)
        return DONE;
    report_clops_error(status); /* a failed clops call changed nothing: the host may redo it */
    return host_routine(r, g->width) != NULL ? RUN_ON_HOST : DONE;
}

typedef void sgemm_fn(const char *, const char *, const int *, const int *, const int *,
                      const float *, const float *, const int *, const float *, const int *,
                      const float *, float *, const int *, size_t, size_t);
typedef void dgemm_fn(const char *, const char *, const int *, const int *, const int *,
                      const double *, const double *, const int *, const double *, const int *,
                      const double *, double *, const int *, size_t, size_t);
typedef void gemm_fn(const char *, const char *, const int *, const int *, const int *,
                     const void *, const void *, const int *, const void *, const int *,
                     const void *, void *, const int *, size_t, size_t);
typedef void gemm64_fn(const char *, const char *, const int64_t *, const int64_t *,
                       const int64_t *, const void *, const void *, const int64_t *, const void *,
                       const int64_t *, const void *, void *, const int64_t *, size_t, size_t);

/* alpha and beta at the routine's precision, as gemm_call holds them. */
static double gemm_scalar(enum routine r, const void *x)
{
    return r == DGEMM ? *(const double *)x : *(const float *)x;
}

static void gemm_lp64(enum routine r, const char *transa, const char *transb, const int *m,
                      const int *n, const int *k, const void *alpha, const void *a, const int *lda,
                      const void *b, const int *ldb, const void *beta, void *c, const int *ldc,
                      size_t transa_len, size_t transb_len)
{
    const double alpha_value = gemm_scalar(r, alpha), beta_value = gemm_scalar(r, beta);
    const struct gemm_call g = {r,          LP64, *transa, *transb, *m,   *n,   *k,  alpha_value,
                                beta_value, a,    b,       c,       *lda, *ldb, *ldc};
    if (gemm_run(&g) == RUN_ON_HOST)
        ((gemm_fn *)host_routine(r, LP64))(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                                           ldc, transa_len, transb_len);
}

static void gemm_ilp64(enum routine r, const char *transa, const char *transb, const int64_t *m,
                       const int64_t *n, const int64_t *k, const void *alpha, const void *a,
                       const int64_t *lda, const void *b, const int64_t *ldb, const void *beta,
                       void *c, const int64_t *ldc, size_t transa_len, size_t transb_len)
{
    const double alpha_value = gemm_scalar(r, alpha), beta_value = gemm_scalar(r, beta);
    const struct gemm_call g = {r,          ILP64, *transa, *transb, *m,   *n,   *k,  alpha_value,
                                beta_value, a,     b,       c,       *lda, *ldb, *ldc};
    if (gemm_run(&g) == RUN_ON_HOST)
        ((gemm64_fn *)host_routine(r, ILP64))(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta,
                                              c, ldc, transa_len, transb_len);
}

/* Each routine is exported four times, in s and d (float, double) and with LP64 and ILP64
 * INTEGERs (int, int64_t; suffix 64_): one macro per routine spells its prototype once. */
#define GEMM_ENTRY(name, routine, T, I, run)                                                       \
    EXPORT void name(const char *transa, const char *transb, const I *m, const I *n, const I *k,   \
                     const T *alpha, const T *a, const I *lda, const T *b, const I *ldb,           \
                     const T *beta, T *c, const I *ldc, size_t transa_len, size_t transb_len)      \
    {                                                                                              \
        run(routine, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, transa_len,     \
            transb_len);                                                                           \
    }
GEMM_ENTRY(sgemm_, SGEMM, float, int, gemm_lp64)
GEMM_ENTRY(dgemm_, DGEMM, double, int, gemm_lp64)
GEMM_ENTRY(sgemm_64_, SGEMM, float, int64_t, gemm_ilp64)
GEMM_ENTRY(dgemm_64_, DGEMM, double, int64_t, gemm_ilp64)

/* ---- CBLAS gemm ----------------------------------------------------------------------------
 * As the reference CBLAS and OpenBLAS do: a row-major call is the column-major call on the
 * transposes, C^T = op(B)^T op(A)^T, so errors are reported through xerbla_ with the positions
 * of that Fortran call; a bad order is position 1 of "cblas_?gemm". LP64 only (int arguments). */

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

static char cblas_trans_char(enum CBLAS_TRANSPOSE t)
{
    switch (t) {
    case CblasNoTrans: return 'N';
    case CblasTrans: return 'T';
    case CblasConjTrans: return 'C';
    default: return '?'; /* rejected by gemm_check, as position 1 or 2 */
    }
}

static void cblas_gemm(struct gemm_call g, enum CBLAS_ORDER order, const char *cblas_name)
{
    if (order == CblasRowMajor) {
        const void *a = g.a;
        char transa = g.transa;
        int64_t m = g.m, lda = g.lda;
        g.a = g.b, g.transa = g.transb, g.m = g.n, g.lda = g.ldb;
        g.b = a, g.transb = transa, g.n = m, g.ldb = lda;
    } else if (order != CblasColMajor) {
        report_illegal(cblas_name, LP64, 1);
        return;
    }
    if (gemm_run(&g) != RUN_ON_HOST)
        return;
    /* The host routine takes pointers to the (possibly swapped) Fortran arguments, which came
     * in as int. */
    const int m = (int)g.m, n = (int)g.n, k = (int)g.k;
    const int lda = (int)g.lda, ldb = (int)g.ldb, ldc = (int)g.ldc;
    if (g.routine == DGEMM) {
        const double alpha = g.alpha, beta = g.beta;
        ((dgemm_fn *)host_routine(DGEMM, LP64))(&g.transa, &g.transb, &m, &n, &k, &alpha, g.a, &lda,
                                                g.b, &ldb, &beta, g.c, &ldc, 1, 1);
    } else {
        const float alpha = (float)g.alpha, beta = (float)g.beta;
        ((sgemm_fn *)host_routine(SGEMM, LP64))(&g.transa, &g.transb, &m, &n, &k, &alpha, g.a, &lda,
                                                g.b, &ldb, &beta, g.c, &ldc, 1, 1);
    }
}

/* cblas_sgemm and cblas_dgemm: alpha and beta widened to double, the matrices untyped. */
static void cblas_gemm_either(enum routine r, const char *cblas_name, enum CBLAS_ORDER order,
                              enum CBLAS_TRANSPOSE transa, enum CBLAS_TRANSPOSE transb, int m,
                              int n, int k, double alpha, const void *a, int lda, const void *b,
                              int ldb, double beta, void *c, int ldc)
{
    const char ta = cblas_trans_char(transa), tb = cblas_trans_char(transb);
    const struct gemm_call g = {r, LP64, ta, tb, m, n, k, alpha, beta, a, b, c, lda, ldb, ldc};
    cblas_gemm(g, order, cblas_name);
}

#define CBLAS_GEMM_ENTRY(name, routine, T)                                                         \
    EXPORT void name(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transa,                          \
                     enum CBLAS_TRANSPOSE transb, int m, int n, int k, T alpha, const T *a,        \
                     int lda, const T *b, int ldb, T beta, T *c, int ldc)                          \
    {                                                                                              \
        cblas_gemm_either(routine, #name, order, transa, transb, m, n, k, alpha, a, lda, b, ldb,   \
                          beta, c, ldc);                                                           \
    }
CBLAS_GEMM_ENTRY(cblas_sgemm, SGEMM, float)
CBLAS_GEMM_ENTRY(cblas_dgemm, DGEMM, double)

/* ---- Pivots: clops's are int32 ---------------------------------------------------------------
 * An LP64 caller's ipiv is handed to clops in place; an ILP64 caller's goes through an int32
 * copy, narrowed before getrs and widened after getrf and gesv. */

struct pivots {
    void *caller; /* INTEGER ipiv(n) of the caller's width */
    enum width width;
    int64_t n;
    int32_t *i32; /* what clops reads or writes: `caller` itself (LP64), or a copy */
};

static int32_t pivots_open(struct pivots *p, int narrow)
{
    if (p->width == LP64) {
        p->i32 = p->caller;
        return CLOPS_OK;
    }
    p->i32 = malloc(sizeof *p->i32 * (size_t)max1(p->n));
    if (p->i32 == NULL)
        return CLOPS_ERR_OUT_OF_HOST_MEMORY;
    const int64_t *wide = p->caller;
    /* A pivot outside int32 is outside 1 .. N as well: 0 makes clops reject it as such. */
    if (narrow)
        for (int64_t i = 0; i < p->n; i++)
            p->i32[i] = wide[i] >= INT32_MIN && wide[i] <= INT32_MAX ? (int32_t)wide[i] : 0;
    return CLOPS_OK;
}

static void pivots_close(struct pivots *p, int widen)
{
    if (p->width == LP64)
        return;
    int64_t *wide = p->caller;
    if (widen)
        for (int64_t i = 0; i < p->n; i++)
            wide[i] = p->i32[i];
    free(p->i32);
    p->i32 = NULL;
}

/* ---- getrf, getrs, gesv --------------------------------------------------------------------- */

struct lu_args {
    struct clops_tensor a, b, ipiv, info;
    struct pivots pivots;
    int pivots_in; /* getrs reads ipiv; getrf and gesv write it */
    int32_t trans;
};

/* Runs one clops LU-family call whose arguments LAPACK's checks accepted. Returns DONE with
 * *info set, or RUN_ON_HOST when the host routine should run it instead. */
static enum outcome lu_family_run(enum routine r, enum width w, uint64_t elements, int64_t *info,
                                  int32_t (*call)(struct clops_pool *, const struct lu_args *),
                                  struct lu_args *x)
{
    if (host_for_small(r, w, elements) != NULL)
        return RUN_ON_HOST;
    struct clops_pool *pool = clops_pool();
    if (pool == NULL) {
        if (host_routine(r, w) != NULL)
            return RUN_ON_HOST;
        *info = info_for_clops_failure(CLOPS_ERR_NO_DEVICE);
        return DONE;
    }
    int32_t status = pivots_open(&x->pivots, x->pivots_in);
    if (status != CLOPS_OK) {
        report_clops_failure_once("CLOPS_ERR_OUT_OF_HOST_MEMORY", "no memory for ipiv's copy");
    } else {
        x->ipiv = i32_vector(x->pivots.i32, x->pivots.n);
        status = call(pool, x);
        if (status != CLOPS_OK)
            report_clops_error(status);
    }
    pivots_close(&x->pivots, status == CLOPS_OK && !x->pivots_in);
    if (status == CLOPS_OK)
        return DONE;
    if (host_routine(r, w) != NULL)
        return RUN_ON_HOST;
    *info = info_for_clops_failure(status);
    return DONE;
}

static int32_t call_lu(struct clops_pool *pool, const struct lu_args *x)
{
    return ((clops_lu_fn)clops.lu->entry)(pool, &x->a, &x->ipiv, &x->info, 0 /* partial */);
}

static int32_t call_solve(struct clops_pool *pool, const struct lu_args *x)
{
    return ((clops_solve_fn)clops.solve->entry)(pool, &x->a, &x->b, &x->ipiv, &x->info);
}

static int32_t call_lu_solve(struct clops_pool *pool, const struct lu_args *x)
{
    return ((clops_lu_solve_fn)clops.lu_solve->entry)(pool, &x->a, &x->ipiv, &x->b, x->trans);
}

/* What getrf, getrs and gesv do once LAPACK's checks have set *info: report the argument they
 * rejected (INFO = -position), return quickly when the call is `empty`, and turn away a call
 * with one of its `count` integer arguments beyond int32 (reject_beyond_int32). Returns 1 with
 * *o set when the call ends here, 0 when it goes on to clops. */
static int lu_family_ends_early(enum routine r, enum width w, int empty, int count,
                                const int64_t values[], const int positions[], int64_t *info,
                                enum outcome *o)
{
    *o = DONE;
    if (*info != 0) {
        report_illegal(routines[r].srname, w, -*info);
        return 1;
    }
    if (empty)
        return 1;
    const int64_t beyond = position_beyond_int32(count, values, positions);
    if (beyond != 0)
        *o = reject_beyond_int32(r, beyond, info);
    return beyond != 0;
}

/* ipiv points to INTEGERs of width w; *info receives INFO unless the host routine runs. */
static enum outcome getrf_run(enum routine r, enum width w, int64_t m, int64_t n, void *a,
                              int64_t lda, void *ipiv, int64_t *info)
{
    *info = 0;
    if (m < 0)
        *info = -1;
    else if (n < 0)
        *info = -2;
    else if (lda < max1(m))
        *info = -4;
    enum outcome o;
    if (lu_family_ends_early(r, w, m == 0 || n == 0, 3, (const int64_t[3]){m, n, lda},
                             (const int[3]){1, 2, 4}, info, &o))
        return o;
    int32_t clops_info = 0;
    struct lu_args x = {.a = fortran_matrix(a, routines[r].dtype, m, n, lda),
                        .pivots = {.caller = ipiv, .width = w, .n = m < n ? m : n},
                        .info = i32_vector(&clops_info, 1)};
    o = lu_family_run(r, w, (uint64_t)(m * n), info, call_lu, &x);
    if (o == DONE && *info == 0)
        *info = clops_info;
    return o;
}

static enum outcome getrs_run(enum routine r, enum width w, char trans, int64_t n, int64_t nrhs,
                              const void *a, int64_t lda, const void *ipiv, void *b, int64_t ldb,
                              int64_t *info)
{
    const int notran = lsame(trans, 'N');
    *info = 0;
    if (!notran && !lsame(trans, 'T') && !lsame(trans, 'C'))
        *info = -1;
    else if (n < 0)
        *info = -2;
    else if (nrhs < 0)
        *info = -3;
    else if (lda < max1(n))
        *info = -5;
    else if (ldb < max1(n))
        *info = -8;
    enum outcome o;
    if (lu_family_ends_early(r, w, n == 0 || nrhs == 0, 4, (const int64_t[4]){n, nrhs, lda, ldb},
                             (const int[4]){2, 3, 5, 8}, info, &o))
        return o;
    const int32_t dtype = routines[r].dtype;
    struct lu_args x = {.a = fortran_matrix(a, dtype, n, n, lda),
                        .b = fortran_matrix(b, dtype, n, nrhs, ldb),
                        .pivots = {.caller = (void *)ipiv, .width = w, .n = n},
                        .pivots_in = 1,
                        .trans = notran ? CLOPS_NO_TRANS : CLOPS_TRANS};
    return lu_family_run(r, w, (uint64_t)(n * n) + (uint64_t)(n * nrhs), info, call_lu_solve, &x);
}

static enum outcome gesv_run(enum routine r, enum width w, int64_t n, int64_t nrhs, void *a,
                             int64_t lda, void *ipiv, void *b, int64_t ldb, int64_t *info)
{
    *info = 0;
    if (n < 0)
        *info = -1;
    else if (nrhs < 0)
        *info = -2;
    else if (lda < max1(n))
        *info = -4;
    else if (ldb < max1(n))
        *info = -7;
    enum outcome o;
    if (lu_family_ends_early(r, w, n == 0, 4, (const int64_t[4]){n, nrhs, lda, ldb},
                             (const int[4]){1, 2, 4, 7}, info, &o))
        return o;
    const int32_t dtype = routines[r].dtype;
    int32_t clops_info = 0;
    struct lu_args x = {.a = fortran_matrix(a, dtype, n, n, lda),
                        .b = fortran_matrix(b, dtype, n, nrhs, ldb),
                        .pivots = {.caller = ipiv, .width = w, .n = n},
                        .info = i32_vector(&clops_info, 1)};
    /* gesv factors A even with no right-hand side, as LAPACK's (getrf, then getrs). */
    o = lu_family_run(r, w, (uint64_t)(n * n) + (uint64_t)(n * nrhs), info,
                      nrhs == 0 ? call_lu : call_solve, &x);
    if (o == DONE && *info == 0)
        *info = clops_info;
    return o;
}

/* The entry points of both widths, for both precisions (a, b: float or double). An LP64 INFO
 * always fits in int: it is -position, a column index or -1000 - status. */

typedef void getrf_fn(const int *, const int *, void *, const int *, int *, int *);
typedef void getrs_fn(const char *, const int *, const int *, const void *, const int *,
                      const int *, void *, const int *, int *, size_t);
typedef void gesv_fn(const int *, const int *, void *, const int *, int *, void *, const int *,
                     int *);
typedef void getrf64_fn(const int64_t *, const int64_t *, void *, const int64_t *, int64_t *,
                        int64_t *);
typedef void getrs64_fn(const char *, const int64_t *, const int64_t *, const void *,
                        const int64_t *, const int64_t *, void *, const int64_t *, int64_t *,
                        size_t);
typedef void gesv64_fn(const int64_t *, const int64_t *, void *, const int64_t *, int64_t *, void *,
                       const int64_t *, int64_t *);

static void getrf_lp64(enum routine r, const int *m, const int *n, void *a, const int *lda,
                       int *ipiv, int *info)
{
    int64_t info64;
    if (getrf_run(r, LP64, *m, *n, a, *lda, ipiv, &info64) == RUN_ON_HOST)
        ((getrf_fn *)host_routine(r, LP64))(m, n, a, lda, ipiv, info);
    else
        *info = (int)info64;
}

static void getrf_ilp64(enum routine r, const int64_t *m, const int64_t *n, void *a,
                        const int64_t *lda, int64_t *ipiv, int64_t *info)
{
    if (getrf_run(r, ILP64, *m, *n, a, *lda, ipiv, info) == RUN_ON_HOST)
        ((getrf64_fn *)host_routine(r, ILP64))(m, n, a, lda, ipiv, info);
}

static void getrs_lp64(enum routine r, const char *trans, const int *n, const int *nrhs,
                       const void *a, const int *lda, const int *ipiv, void *b, const int *ldb,
                       int *info, size_t trans_len)
{
    int64_t info64;
    if (getrs_run(r, LP64, *trans, *n, *nrhs, a, *lda, ipiv, b, *ldb, &info64) == RUN_ON_HOST)
        ((getrs_fn *)host_routine(r, LP64))(trans, n, nrhs, a, lda, ipiv, b, ldb, info, trans_len);
    else
        *info = (int)info64;
}

static void getrs_ilp64(enum routine r, const char *trans, const int64_t *n, const int64_t *nrhs,
                        const void *a, const int64_t *lda, const int64_t *ipiv, void *b,
                        const int64_t *ldb, int64_t *info, size_t trans_len)
{
    if (getrs_run(r, ILP64, *trans, *n, *nrhs, a, *lda, ipiv, b, *ldb, info) == RUN_ON_HOST)
        ((getrs64_fn *)host_routine(r, ILP64))(trans, n, nrhs, a, lda, ipiv, b, ldb, info,
                                               trans_len);
}

static void gesv_lp64(enum routine r, const int *n, const int *nrhs, void *a, const int *lda,
                      int *ipiv, void *b, const int *ldb, int *info)
{
    int64_t info64;
    if (gesv_run(r, LP64, *n, *nrhs, a, *lda, ipiv, b, *ldb, &info64) == RUN_ON_HOST)
        ((gesv_fn *)host_routine(r, LP64))(n, nrhs, a, lda, ipiv, b, ldb, info);
    else
        *info = (int)info64;
}

static void gesv_ilp64(enum routine r, const int64_t *n, const int64_t *nrhs, void *a,
                       const int64_t *lda, int64_t *ipiv, void *b, const int64_t *ldb,
                       int64_t *info)
{
    if (gesv_run(r, ILP64, *n, *nrhs, a, *lda, ipiv, b, *ldb, info) == RUN_ON_HOST)
        ((gesv64_fn *)host_routine(r, ILP64))(n, nrhs, a, lda, ipiv, b, ldb, info);
}

#define GETRF_ENTRY(name, routine, T, I, run)                                                      \
    EXPORT void name(const I *m, const I *n, T *a, const I *lda, I *ipiv, I *info)                 \
    {                                                                                              \
        run(routine, m, n, a, lda, ipiv, info);                                                    \
    }
GETRF_ENTRY(sgetrf_, SGETRF, float, int, getrf_lp64)
GETRF_ENTRY(dgetrf_, DGETRF, double, int, getrf_lp64)
GETRF_ENTRY(sgetrf_64_, SGETRF, float, int64_t, getrf_ilp64)
GETRF_ENTRY(dgetrf_64_, DGETRF, double, int64_t, getrf_ilp64)

#define GETRS_ENTRY(name, routine, T, I, run)                                                      \
    EXPORT void name(const char *trans, const I *n, const I *nrhs, const T *a, const I *lda,       \
                     const I *ipiv, T *b, const I *ldb, I *info, size_t trans_len)                 \
    {                                                                                              \
        run(routine, trans, n, nrhs, a, lda, ipiv, b, ldb, info, trans_len);                       \
    }
GETRS_ENTRY(sgetrs_, SGETRS, float, int, getrs_lp64)
GETRS_ENTRY(dgetrs_, DGETRS, double, int, getrs_lp64)
GETRS_ENTRY(sgetrs_64_, SGETRS, float, int64_t, getrs_ilp64)
GETRS_ENTRY(dgetrs_64_, DGETRS, double, int64_t, getrs_ilp64)

#define GESV_ENTRY(name, routine, T, I, run)                                                       \
    EXPORT void name(const I *n, const I *nrhs, T *a, const I *lda, I *ipiv, T *b, const I *ldb,   \
                     I *info)                                                                      \
    {                                                                                              \
        run(routine, n, nrhs, a, lda, ipiv, b, ldb, info);                                         \
    }
GESV_ENTRY(sgesv_, SGESV, float, int, gesv_lp64)
GESV_ENTRY(dgesv_, DGESV, double, int, gesv_lp64)
GESV_ENTRY(sgesv_64_, SGESV, float, int64_t, gesv_ilp64)
GESV_ENTRY(dgesv_64_, DGESV, double, int64_t, gesv_ilp64)
