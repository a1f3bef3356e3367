/* test_julia_calls.c — makes, from C, exactly the calls hosts/julia/Clops.jl makes through ccall:
 * the same dlopen, the table read at the same byte offsets, tensors laid out as its ClopsTensor,
 * column-major views with strides (1, ld), 1-based pivots. Julia is not installable on our
 * machines; this is what checks the module's assumptions against the real library. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clops.h"

/* ---- What Clops.jl assumes (keep in step with its constants) ----------------------------------
 */

/* struct ClopsTensor: Julia lays out an immutable isbits struct as C does. */
enum {
    JL_TENSOR_SIZE = 96,
    JL_DATA = 0,
    JL_BUFFER = 8,
    JL_OFFSET = 16,
    JL_DTYPE = 24,
    JL_RANK = 28,
    JL_SHAPE = 32,
    JL_STRIDES = 64
};
_Static_assert(sizeof(struct clops_tensor) == JL_TENSOR_SIZE, "ClopsTensor is 96 bytes");
_Static_assert(offsetof(struct clops_tensor, data) == JL_DATA, "data");
_Static_assert(offsetof(struct clops_tensor, buffer) == JL_BUFFER, "buffer");
_Static_assert(offsetof(struct clops_tensor, offset) == JL_OFFSET, "offset");
_Static_assert(offsetof(struct clops_tensor, dtype) == JL_DTYPE, "dtype");
_Static_assert(offsetof(struct clops_tensor, rank) == JL_RANK, "rank");
_Static_assert(offsetof(struct clops_tensor, shape) == JL_SHAPE, "shape");
_Static_assert(offsetof(struct clops_tensor, strides) == JL_STRIDES, "strides");
/* No padding: the seven fields cover all 96 bytes. */
_Static_assert(8 + 8 + 8 + 4 + 4 + 4 * 8 + 4 * 8 == JL_TENSOR_SIZE, "no padding");

/* Indices of the table's function pointers, at byte 8 + 8 i (API_* in Clops.jl). */
enum {
    API_VERSION = 0,
    API_LAST_ERROR = 1,
    API_STATUS_NAME = 2,
    API_POOL_CREATE_DEFAULT = 5,
    API_POOL_CREATE_FROM_FILE = 6,
    API_POOL_RELEASE = 8,
    API_OP_FIND = 20
};
enum { API_BYTES_NEEDED = 8 + 8 * (API_OP_FIND + 1), OP_ENTRY_OFFSET = 48 };
_Static_assert(offsetof(struct clops_op, entry) == OP_ENTRY_OFFSET, "op entry offset");
/* What Clops.jl's comment says of ABI 1.2's sized arrays. */
_Static_assert(offsetof(struct clops_op, param_size) == 56, "op param_size offset");
_Static_assert(offsetof(struct clops_api, invoke_sized) == 8 + 8 * 24, "invoke_sized index");

/* ---- Checks ---------------------------------------------------------------------------------- */

static int failures, checks;

static void expect(int ok, const char *format, ...)
{
    checks++;
    if (ok)
        return;
    failures++;
    va_list ap;
    va_start(ap, format);
    fputs("FAIL: ", stdout);
    vprintf(format, ap);
    putchar('\n');
    va_end(ap);
}

/* ---- The library as Clops.jl sees it: bytes at offsets --------------------------------------- */

typedef void (*any_fn)(void);

static const unsigned char *table;  /* the api pointer, read as bytes */
static const struct clops_api *api; /* the same pointer through the header, to compare */

/* unsafe_load(Ptr{Ptr{Cvoid}}(API[] + 8 + 8i)) */
static any_fn api_function(int i)
{
    any_fn f;
    memcpy(&f, table + 8 + 8 * i, sizeof f);
    return f;
}

static const char *jl_last_error(void)
{
    return ((const char *(*)(void))api_function(API_LAST_ERROR))();
}

static const char *jl_status_name(int32_t status)
{
    return ((const char *(*)(int32_t))api_function(API_STATUS_NAME))(status);
}

/* The table pointer at byte 8 + 8 i is the header's member, address and value. */
static void expect_member(int i, const void *member_address, any_fn member, const char *name)
{
    expect((const void *)(table + 8 + 8 * i) == member_address,
           "table byte offset %d is not &api->%s", 8 + 8 * i, name);
    expect(api_function(i) == member, "the pointer at byte %d is not api->%s", 8 + 8 * i, name);
}

static void test_table_offsets(void)
{
    uint32_t struct_size;
    uint16_t abi_major;
    memcpy(&struct_size, table, sizeof struct_size);
    memcpy(&abi_major, table + 4, sizeof abi_major);
    expect(struct_size == api->struct_size, "struct_size at byte 0");
    expect(abi_major == api->abi_major && abi_major == 1, "abi_major at byte 4 is %u", abi_major);
    expect(struct_size >= API_BYTES_NEEDED, "table of %u bytes < %d", struct_size,
           API_BYTES_NEEDED);
    expect(API_BYTES_NEEDED == offsetof(struct clops_api, op_find) + sizeof api->op_find,
           "API_BYTES_NEEDED ends at op_find");
    expect_member(API_VERSION, &api->version, (any_fn)api->version, "version");
    expect_member(API_LAST_ERROR, &api->last_error, (any_fn)api->last_error, "last_error");
    expect_member(API_STATUS_NAME, &api->status_name, (any_fn)api->status_name, "status_name");
    expect_member(API_POOL_CREATE_DEFAULT, &api->pool_create_default,
                  (any_fn)api->pool_create_default, "pool_create_default");
    expect_member(API_POOL_CREATE_FROM_FILE, &api->pool_create_from_file,
                  (any_fn)api->pool_create_from_file, "pool_create_from_file");
    expect_member(API_POOL_RELEASE, &api->pool_release, (any_fn)api->pool_release, "pool_release");
    expect_member(API_OP_FIND, &api->op_find, (any_fn)api->op_find, "op_find");

    const char *version = ((const char *(*)(void))api_function(API_VERSION))();
    expect(version != NULL && strcmp(version, api->version()) == 0 && version[0] != '\0',
           "version() through the offset");
    expect(strcmp(jl_status_name(CLOPS_ERR_INVALID_ARGUMENT), "CLOPS_ERR_INVALID_ARGUMENT") == 0,
           "status_name(1) through the offset");
}

/* op_entry in Clops.jl: op_find(name), struct_size covers the entry, the entry at byte 48. */
static any_fn op_entry(const char *name)
{
    const unsigned char *op =
        ((const unsigned char *(*)(const char *))api_function(API_OP_FIND))(name);
    expect(op != NULL, "op_find(\"%s\")", name);
    if (op == NULL)
        return NULL;
    uint32_t op_size;
    memcpy(&op_size, op, sizeof op_size);
    expect(op_size >= OP_ENTRY_OFFSET + 8, "%s: op struct_size %u", name, op_size);
    any_fn f;
    memcpy(&f, op + OP_ENTRY_OFFSET, sizeof f);
    const struct clops_op *described = (const struct clops_op *)(const void *)op;
    expect((const void *)(op + OP_ENTRY_OFFSET) == (const void *)&described->entry &&
               f == described->entry && f != NULL,
           "%s: entry at byte %d", name, OP_ENTRY_OFFSET);
    return f;
}

/* ---- Tensors as Clops.jl builds them ----------------------------------------------------------
 */

/* ClopsTensor(pointer(A), C_NULL, 0, dtype, rank, shape, strides), field by field at the
 * offsets Julia gives them, into bytes that C then reads as struct clops_tensor. */
static struct clops_tensor julia_tensor(void *data, int32_t dtype, int32_t rank, int64_t shape0,
                                        int64_t shape1, int64_t stride0, int64_t stride1)
{
    union {
        struct clops_tensor t;
        unsigned char bytes[JL_TENSOR_SIZE];
    } u;
    void *buffer = NULL;
    int64_t offset = 0, shape[4] = {shape0, shape1, 0, 0}, strides[4] = {stride0, stride1, 0, 0};
    memset(u.bytes, 0xA5, sizeof u.bytes); /* every byte below is written by a field */
    memcpy(u.bytes + JL_DATA, &data, 8);
    memcpy(u.bytes + JL_BUFFER, &buffer, 8);
    memcpy(u.bytes + JL_OFFSET, &offset, 8);
    memcpy(u.bytes + JL_DTYPE, &dtype, 4);
    memcpy(u.bytes + JL_RANK, &rank, 4);
    memcpy(u.bytes + JL_SHAPE, shape, 32);
    memcpy(u.bytes + JL_STRIDES, strides, 32);
    return u.t;
}

/* tensor(A::StridedMatrix): a column-major view whose first element is at `first`. */
static struct clops_tensor jl_matrix(void *first, int32_t dtype, int64_t rows, int64_t cols,
                                     int64_t ld)
{
    return julia_tensor(first, dtype, 2, rows, cols, 1, ld);
}

/* tensor(v::StridedVector{Int32}): ipiv and info. */
static struct clops_tensor jl_i32_vector(int32_t *v, int64_t n)
{
    return julia_tensor(v, CLOPS_I32, 1, n, 0, 1, 0);
}

/* column(v): a right-hand side vector as an N×1 matrix. */
static struct clops_tensor jl_column(void *v, int32_t dtype, int64_t n)
{
    return julia_tensor(v, dtype, 2, n, 1, 1, n > 1 ? n : 1);
}

static void test_tensor_bytes_match_header(void)
{
    double x[6];
    struct clops_tensor t = jl_matrix(x + 1, CLOPS_F64, 2, 2, 3);
    expect(t.data == (void *)(x + 1) && t.buffer == NULL && t.offset == 0 && t.dtype == CLOPS_F64 &&
               t.rank == 2 && t.shape[0] == 2 && t.shape[1] == 2 && t.shape[2] == 0 &&
               t.strides[0] == 1 && t.strides[1] == 3 && t.strides[3] == 0,
           "the Julia-laid-out bytes read back as the header's struct clops_tensor");
}

/* ---- Data --------------------------------------------------------------------------------- */

static uint64_t rng_state;

static double uniform(void) /* in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A parent matrix of ld × cols with NaN everywhere; the view (1:rows, 1:cols) gets values. */
static double *parent_f64(int64_t ld, int64_t cols)
{
    double *p = malloc((size_t)(ld * cols) * sizeof *p);
    for (int64_t i = 0; i < ld * cols; i++)
        p[i] = NAN;
    return p;
}

static void fill(double *a, int64_t rows, int64_t cols, int64_t ld)
{
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++)
            a[i + j * ld] = uniform();
}

/* ---- gemm! -------------------------------------------------------------------------------- */

typedef int32_t (*gemm_call)(struct clops_pool *, const struct clops_tensor *,
                             const struct clops_tensor *, const struct clops_tensor *, int32_t,
                             int32_t, double, double);

/* op(X)(i, j) of a column-major X with leading dimension ld. */
static long double at(const double *x, int64_t ld, int trans, int64_t i, int64_t j)
{
    return trans ? x[j + i * ld] : x[i + j * ld];
}

/* gemm!(pool, view(Cp, 1:m, 1:n), view(Ap, ...), view(Bp, ...); alpha, beta, transA, transB)
 * in f64 and f32, against a long double loop. The views start one row and one column into
 * their parents, as view(P, 2:m+1, 2:n+1) does: pointer() is the first element, offset 0. */
static void test_gemm_column_major(struct clops_pool *pool, gemm_call gemm, int trans_a,
                                   int trans_b, double alpha, double beta)
{
    const int64_t m = 7, n = 6, k = 5;
    const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    const int64_t lda = a_rows + 3, ldb = b_rows + 2, ldc = m + 4;
    double *ap = parent_f64(lda, a_cols + 1), *bp = parent_f64(ldb, b_cols + 1);
    double *cp = parent_f64(ldc, n + 1), *c0 = malloc((size_t)(ldc * (n + 1)) * sizeof *c0);
    double *a = ap + 1 + lda, *b = bp + 1 + ldb, *c = cp + 1 + ldc;
    fill(a, a_rows, a_cols, lda);
    fill(b, b_rows, b_cols, ldb);
    if (beta != 0)
        fill(c, m, n, ldc); /* beta = 0: C stays NaN, which must be ignored */
    memcpy(c0, cp, (size_t)(ldc * (n + 1)) * sizeof *c0);

    float *af = malloc((size_t)(lda * (a_cols + 1)) * sizeof *af);
    float *bf = malloc((size_t)(ldb * (b_cols + 1)) * sizeof *bf);
    float *cf = malloc((size_t)(ldc * (n + 1)) * sizeof *cf);
    for (int64_t i = 0; i < lda * (a_cols + 1); i++)
        af[i] = (float)ap[i];
    for (int64_t i = 0; i < ldb * (b_cols + 1); i++)
        bf[i] = (float)bp[i];
    for (int64_t i = 0; i < ldc * (n + 1); i++)
        cf[i] = (float)cp[i];

    struct clops_tensor ta = jl_matrix(a, CLOPS_F64, a_rows, a_cols, lda);
    struct clops_tensor tb = jl_matrix(b, CLOPS_F64, b_rows, b_cols, ldb);
    struct clops_tensor tc = jl_matrix(c, CLOPS_F64, m, n, ldc);
    int32_t status = gemm(pool, &ta, &tb, &tc, trans_a, trans_b, alpha, beta);
    expect(status == CLOPS_OK, "gemm f64 (%d,%d): %s", trans_a, trans_b, jl_last_error());

    struct clops_tensor fa = jl_matrix(af + 1 + lda, CLOPS_F32, a_rows, a_cols, lda);
    struct clops_tensor fb = jl_matrix(bf + 1 + ldb, CLOPS_F32, b_rows, b_cols, ldb);
    struct clops_tensor fc = jl_matrix(cf + 1 + ldc, CLOPS_F32, m, n, ldc);
    status = gemm(pool, &fa, &fb, &fc, trans_a, trans_b, alpha, beta);
    expect(status == CLOPS_OK, "gemm f32 (%d,%d): %s", trans_a, trans_b, jl_last_error());

    double err64 = 0, err32 = 0;
    int outside_untouched = 1;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            long double sum = 0, scale = 0;
            for (int64_t p = 0; p < k; p++) {
                long double term = at(a, lda, trans_a, i, p) * at(b, ldb, trans_b, p, j);
                sum += term;
                scale += fabsl(term);
            }
            long double ref = alpha * sum, c_old = c0[1 + ldc + i + j * ldc];
            if (beta != 0)
                ref += beta * c_old;
            scale = fabsl((long double)alpha) * scale + (beta != 0 ? fabsl(beta * c_old) : 0) + 1;
            err64 = fmax(err64, (double)(fabsl(c[i + j * ldc] - ref) / scale));
            err32 = fmax(err32, (double)(fabsl(cf[1 + ldc + i + j * ldc] - ref) / scale));
        }
    /* The parent's elements outside the view stay NaN: ld was honoured. */
    for (int64_t j = 0; j <= n; j++)
        for (int64_t i = 0; i < ldc; i++)
            if (j == 0 || i == 0 || i > m)
                outside_untouched &= isnan(cp[i + j * ldc]) && isnan(cf[i + j * ldc]);
    expect(err64 < 16 * DBL_EPSILON, "gemm f64 (%d,%d) alpha %g beta %g: error %.3g", trans_a,
           trans_b, alpha, beta, err64);
    expect(err32 < 16 * FLT_EPSILON, "gemm f32 (%d,%d) alpha %g beta %g: error %.3g", trans_a,
           trans_b, alpha, beta, err32);
    expect(outside_untouched, "gemm (%d,%d) wrote outside the view", trans_a, trans_b);
    printf("gemm (%d,%d) alpha %g beta %g: f64 error %.2e, f32 error %.2e\n", trans_a, trans_b,
           alpha, beta, err64, err32);
    free(ap), free(bp), free(cp), free(c0), free(af), free(bf), free(cf);
}

/* check(status): a failure is ClopsError(status, last_error()). */
static void test_gemm_error_message(struct clops_pool *pool, gemm_call gemm)
{
    double a[6], b[6], c[4];
    struct clops_tensor ta = jl_matrix(a, CLOPS_F64, 2, 3, 2);
    struct clops_tensor tb = jl_matrix(b, CLOPS_F64, 2, 3, 2); /* K = 3 against 2 */
    struct clops_tensor tc = jl_matrix(c, CLOPS_F64, 2, 2, 2);
    int32_t status = gemm(pool, &ta, &tb, &tc, 0, 0, 1, 0);
    const char *message = jl_last_error();
    expect(status == CLOPS_ERR_INVALID_ARGUMENT, "mismatched gemm: status %d", status);
    expect(strstr(message, "gemm") != NULL && strstr(message, "'b'") != NULL,
           "mismatched gemm: message names gemm and 'b': \"%s\"", message);
    printf("ClopsError(%s, \"%s\")\n", jl_status_name(status), message);
}

/* ---- lu! ---------------------------------------------------------------------------------- */

typedef int32_t (*lu_call)(struct clops_pool *, const struct clops_tensor *,
                           const struct clops_tensor *, const struct clops_tensor *, int32_t);

/* A = [1 2 3; 4 5 6; 7 8 10]: LAPACK's dgetrf gives ipiv = [3, 3, 3] and
 * LU = [7 8 10; 1/7 6/7 11/7; 4/7 1/2 -1/2]. */
static void test_lu_known_3x3(struct clops_pool *pool, lu_call lu)
{
    const double a0[9] = {1, 4, 7, 2, 5, 8, 3, 6, 10}; /* column-major */
    const double want[9] = {7, 1.0 / 7, 4.0 / 7, 8, 6.0 / 7, 0.5, 10, 11.0 / 7, -0.5};
    double a[9];
    float af[9];
    memcpy(a, a0, sizeof a);
    for (int i = 0; i < 9; i++)
        af[i] = (float)a0[i];
    int32_t ipiv[3] = {0, 0, 0}, info[1] = {-1}, ipivf[3] = {0, 0, 0}, infof[1] = {-1};

    struct clops_tensor ta = jl_matrix(a, CLOPS_F64, 3, 3, 3), tp = jl_i32_vector(ipiv, 3);
    struct clops_tensor ti = jl_i32_vector(info, 1);
    int32_t status = lu(pool, &ta, &tp, &ti, 0);
    expect(status == CLOPS_OK, "lu f64: %s", jl_last_error());
    struct clops_tensor fa = jl_matrix(af, CLOPS_F32, 3, 3, 3), fp = jl_i32_vector(ipivf, 3);
    struct clops_tensor fi = jl_i32_vector(infof, 1);
    status = lu(pool, &fa, &fp, &fi, 0);
    expect(status == CLOPS_OK, "lu f32: %s", jl_last_error());

    double err64 = 0, err32 = 0;
    for (int i = 0; i < 9; i++) {
        err64 = fmax(err64, fabs(a[i] - want[i]));
        err32 = fmax(err32, fabs(af[i] - want[i]));
    }
    expect(ipiv[0] == 3 && ipiv[1] == 3 && ipiv[2] == 3,
           "lu f64 ipiv = [%d, %d, %d], want [3, 3, 3]", ipiv[0], ipiv[1], ipiv[2]);
    expect(ipivf[0] == 3 && ipivf[1] == 3 && ipivf[2] == 3, "lu f32 ipiv = [%d, %d, %d]", ipivf[0],
           ipivf[1], ipivf[2]);
    expect(info[0] == 0 && infof[0] == 0, "lu info = %d, %d", info[0], infof[0]);
    expect(err64 < 64 * DBL_EPSILON, "lu f64 factors: error %.3g", err64);
    expect(err32 < 64 * FLT_EPSILON, "lu f32 factors: error %.3g", err32);
    printf("lu 3x3: ipiv [%d, %d, %d], info %d, factor error f64 %.2e f32 %.2e\n", ipiv[0], ipiv[1],
           ipiv[2], info[0], err64, err32);
}

/* [1 2; 2 4]: the pivot is row 2, then U(2, 2) = 0 exactly: info = 2. */
static void test_lu_singular_info(struct clops_pool *pool, lu_call lu)
{
    double a[4] = {1, 2, 2, 4};
    int32_t ipiv[2] = {0, 0}, info[1] = {-1};
    struct clops_tensor ta = jl_matrix(a, CLOPS_F64, 2, 2, 2), tp = jl_i32_vector(ipiv, 2);
    struct clops_tensor ti = jl_i32_vector(info, 1);
    int32_t status = lu(pool, &ta, &tp, &ti, 0);
    expect(status == CLOPS_OK, "lu singular: %s", jl_last_error());
    expect(info[0] == 2 && ipiv[0] == 2, "lu singular: info %d ipiv[0] %d, want 2 and 2", info[0],
           ipiv[0]);
}

/* ---- solve! ------------------------------------------------------------------------------- */

typedef int32_t (*solve_call)(struct clops_pool *, const struct clops_tensor *,
                              const struct clops_tensor *, const struct clops_tensor *,
                              const struct clops_tensor *);

/* max |A X - B| / (|A| |X| n), A and B the originals, X what solve! left in B. */
static double residual(const double *a, int64_t lda, const double *x, int64_t ldx, const double *b,
                       int64_t ldb, int64_t n, int64_t nrhs)
{
    long double worst = 0, norm_a = 0, norm_x = 0;
    for (int64_t i = 0; i < n * n; i++)
        norm_a = fmaxl(norm_a, fabsl(a[i % n + i / n * lda]));
    for (int64_t j = 0; j < nrhs; j++)
        for (int64_t i = 0; i < n; i++) {
            long double r = -(long double)b[i + j * ldb];
            for (int64_t p = 0; p < n; p++)
                r += (long double)a[i + p * lda] * x[p + j * ldx];
            worst = fmaxl(worst, fabsl(r));
            norm_x = fmaxl(norm_x, fabsl(x[i + j * ldx]));
        }
    return (double)(worst / (norm_a * norm_x * n));
}

/* solve!(pool, view(Ap, 1:n, 1:n), view(Bp, 1:n, 1:nrhs)) and solve!(pool, A, b::Vector). */
static void test_solve_residual(struct clops_pool *pool, solve_call solve)
{
    const int64_t n = 11, nrhs = 3, lda = 13, ldb = 12;
    double *a = parent_f64(lda, n), *b = parent_f64(ldb, nrhs);
    double *a0 = malloc((size_t)(lda * n) * sizeof *a0),
           *b0 = malloc((size_t)(ldb * nrhs) * sizeof *b0);
    fill(a, n, n, lda);
    fill(b, n, nrhs, ldb);
    memcpy(a0, a, (size_t)(lda * n) * sizeof *a0);
    memcpy(b0, b, (size_t)(ldb * nrhs) * sizeof *b0);
    int32_t ipiv[11], info[1] = {-1};

    struct clops_tensor ta = jl_matrix(a, CLOPS_F64, n, n, lda);
    struct clops_tensor tb = jl_matrix(b, CLOPS_F64, n, nrhs, ldb);
    struct clops_tensor tp = jl_i32_vector(ipiv, n), ti = jl_i32_vector(info, 1);
    int32_t status = solve(pool, &ta, &tb, &tp, &ti);
    expect(status == CLOPS_OK && info[0] == 0, "solve f64: status %d info %d: %s", status, info[0],
           jl_last_error());
    double r = residual(a0, lda, b, ldb, b0, ldb, n, nrhs);
    int pivots_in_range = 1;
    for (int64_t i = 0; i < n; i++)
        pivots_in_range &= ipiv[i] >= i + 1 && ipiv[i] <= n;
    expect(r < 8 * DBL_EPSILON, "solve f64 matrix residual %.3g", r);
    expect(pivots_in_range, "solve pivots are 1-based, ipiv[i] in i+1 .. n");

    /* A vector right-hand side as column(v): N×1, strides (1, N). */
    double *v = malloc((size_t)n * sizeof *v), *v0 = malloc((size_t)n * sizeof *v0);
    for (int64_t i = 0; i < n; i++)
        v[i] = v0[i] = uniform();
    memcpy(a, a0, (size_t)(lda * n) * sizeof *a);
    struct clops_tensor tv = jl_column(v, CLOPS_F64, n);
    status = solve(pool, &ta, &tv, &tp, &ti);
    expect(status == CLOPS_OK && info[0] == 0, "solve f64 vector: %s", jl_last_error());
    double rv = residual(a0, lda, v, n, v0, n, n, 1);
    expect(rv < 8 * DBL_EPSILON, "solve f64 vector residual %.3g", rv);

    /* f32, the same system. */
    float af[13 * 11], bf[12 * 3];
    for (int64_t i = 0; i < lda * n; i++)
        af[i] = (float)a0[i];
    for (int64_t i = 0; i < ldb * nrhs; i++)
        bf[i] = (float)b0[i];
    struct clops_tensor fa = jl_matrix(af, CLOPS_F32, n, n, lda);
    struct clops_tensor fb = jl_matrix(bf, CLOPS_F32, n, nrhs, ldb);
    status = solve(pool, &fa, &fb, &tp, &ti);
    expect(status == CLOPS_OK && info[0] == 0, "solve f32: %s", jl_last_error());
    /* Its residual against the system as rounded to f32. */
    for (int64_t i = 0; i < lda * n; i++)
        a[i] = (float)a0[i];
    for (int64_t i = 0; i < ldb * nrhs; i++) {
        b[i] = bf[i];
        b0[i] = (float)b0[i];
    }
    double rf = residual(a, lda, b, ldb, b0, ldb, n, nrhs);
    expect(rf < 8 * FLT_EPSILON, "solve f32 matrix residual %.3g", rf);
    printf("solve %lldx%lld, %lld rhs: residual f64 %.2e, vector %.2e, f32 %.2e\n", (long long)n,
           (long long)n, (long long)nrhs, r, rv, rf);
    free(a), free(b), free(a0), free(b0), free(v), free(v0);
}

/* A singular A: info > 0 (solve! throws SingularException) and B is left untouched. */
static void test_solve_singular_leaves_b(struct clops_pool *pool, solve_call solve)
{
    double a[4] = {1, 2, 2, 4}, b[2] = {3, 5};
    int32_t ipiv[2], info[1] = {-1};
    struct clops_tensor ta = jl_matrix(a, CLOPS_F64, 2, 2, 2), tb = jl_column(b, CLOPS_F64, 2);
    struct clops_tensor tp = jl_i32_vector(ipiv, 2), ti = jl_i32_vector(info, 1);
    int32_t status = solve(pool, &ta, &tb, &tp, &ti);
    expect(status == CLOPS_OK && info[0] == 2, "singular solve: status %d info %d", status,
           info[0]);
    expect(b[0] == 3 && b[1] == 5, "singular solve left b untouched: [%g, %g]", b[0], b[1]);
}

/* ---- Pools -------------------------------------------------------------------------------- */

static void test_pool_from_missing_file(void)
{
    const char *path = "/nonexistent/julia-test-clops.cfg";
    struct clops_pool *pool = NULL;
    int32_t status = ((int32_t(*)(const char *, struct clops_pool **))api_function(
        API_POOL_CREATE_FROM_FILE))(path, &pool);
    const char *message = jl_last_error();
    expect(status != CLOPS_OK && pool == NULL, "pool from a missing file: status %d", status);
    expect(strstr(message, path) != NULL, "the message names the file: \"%s\"", message);
}

/* ---- Clops.jl's own definitions, read from the file, against the header ----------------------
 * Julia lays out an isbits struct as C does: each field at the next multiple of its alignment,
 * the size rounded up to the largest. The mirrors in Clops.jl are parsed, laid out by that rule
 * and compared, size and every member's name and offset, with the C compiler's. */

enum { MAX_MEMBERS = 16 };
struct c_member {
    const char *name;
    size_t offset, size;
};
struct c_struct {
    const char *julia_name;
    size_t size;
    int count;
    struct c_member members[MAX_MEMBERS];
};
#define M(type, member)                                                                            \
    {                                                                                              \
#member, offsetof(struct type, member), sizeof(((struct type *)0)->member)                 \
    }
static const struct c_struct header_structs[] = {
    {"ClopsTensor",
     sizeof(struct clops_tensor),
     7,
     {M(clops_tensor, data), M(clops_tensor, buffer), M(clops_tensor, offset),
      M(clops_tensor, dtype), M(clops_tensor, rank), M(clops_tensor, shape),
      M(clops_tensor, strides)}},
    {"StreamCreateArgs",
     sizeof(struct clops_stream_create_args),
     5,
     {M(clops_stream_create_args, struct_size), M(clops_stream_create_args, device),
      M(clops_stream_create_args, pool), M(clops_stream_create_args, cl_queue),
      M(clops_stream_create_args, stream)}},
    {"StreamReleaseArgs",
     sizeof(struct clops_stream_release_args),
     3,
     {M(clops_stream_release_args, struct_size), M(clops_stream_release_args, reserved),
      M(clops_stream_release_args, stream)}},
    {"StreamWaitArgs",
     sizeof(struct clops_stream_wait_args),
     4,
     {M(clops_stream_wait_args, struct_size), M(clops_stream_wait_args, event_count),
      M(clops_stream_wait_args, stream), M(clops_stream_wait_args, events)}},
    {"SubmitArgs",
     sizeof(struct clops_submit_args),
     13,
     {M(clops_submit_args, struct_size), M(clops_submit_args, op_index),
      M(clops_submit_args, stream), M(clops_submit_args, args), M(clops_submit_args, nargs),
      M(clops_submit_args, arg_size), M(clops_submit_args, wait_events),
      M(clops_submit_args, wait_count), M(clops_submit_args, cl_wait_count),
      M(clops_submit_args, cl_wait_events), M(clops_submit_args, on_complete),
      M(clops_submit_args, user), M(clops_submit_args, event)}},
    {"EventQueryArgs",
     sizeof(struct clops_event_query_args),
     7,
     {M(clops_event_query_args, struct_size), M(clops_event_query_args, state),
      M(clops_event_query_args, event), M(clops_event_query_args, status),
      M(clops_event_query_args, reserved), M(clops_event_query_args, message),
      M(clops_event_query_args, progress)}},
    {"EventWaitArgs",
     sizeof(struct clops_event_wait_args),
     6,
     {M(clops_event_wait_args, struct_size), M(clops_event_wait_args, count),
      M(clops_event_wait_args, events), M(clops_event_wait_args, timeout_ns),
      M(clops_event_wait_args, wait_all), M(clops_event_wait_args, ready)}},
    {"EventCallbackArgs",
     sizeof(struct clops_event_callback_args),
     5,
     {M(clops_event_callback_args, struct_size), M(clops_event_callback_args, reserved),
      M(clops_event_callback_args, event), M(clops_event_callback_args, fn),
      M(clops_event_callback_args, user)}},
    {"EventCancelArgs",
     sizeof(struct clops_event_cancel_args),
     3,
     {M(clops_event_cancel_args, struct_size), M(clops_event_cancel_args, reserved),
      M(clops_event_cancel_args, event)}},
    {"EventReleaseArgs",
     sizeof(struct clops_event_release_args),
     3,
     {M(clops_event_release_args, struct_size), M(clops_event_release_args, reserved),
      M(clops_event_release_args, event)}},
    {"EventClArgs",
     sizeof(struct clops_event_cl_args),
     4,
     {M(clops_event_cl_args, struct_size), M(clops_event_cl_args, reserved),
      M(clops_event_cl_args, event), M(clops_event_cl_args, cl_event)}},
    {"PoolFromClArgs",
     sizeof(struct clops_pool_from_cl_args),
     7,
     {M(clops_pool_from_cl_args, struct_size), M(clops_pool_from_cl_args, device_count),
      M(clops_pool_from_cl_args, cl_context), M(clops_pool_from_cl_args, cl_devices),
      M(clops_pool_from_cl_args, cl_queues), M(clops_pool_from_cl_args, config_text),
      M(clops_pool_from_cl_args, pool)}},
    {"BufferWrapArgs",
     sizeof(struct clops_buffer_wrap_args),
     6,
     {M(clops_buffer_wrap_args, struct_size), M(clops_buffer_wrap_args, device),
      M(clops_buffer_wrap_args, pool), M(clops_buffer_wrap_args, cl_mem),
      M(clops_buffer_wrap_args, buffer), M(clops_buffer_wrap_args, bytes)}},
    {"BufferClArgs",
     sizeof(struct clops_buffer_cl_args),
     5,
     {M(clops_buffer_cl_args, struct_size), M(clops_buffer_cl_args, device),
      M(clops_buffer_cl_args, buffer), M(clops_buffer_cl_args, cl_mem),
      M(clops_buffer_cl_args, cl_context)}},
    {"MemoryStatsArgs",
     sizeof(struct clops_memory_stats_args),
     7,
     {M(clops_memory_stats_args, struct_size), M(clops_memory_stats_args, device),
      M(clops_memory_stats_args, pool), M(clops_memory_stats_args, allocated_bytes),
      M(clops_memory_stats_args, peak_bytes), M(clops_memory_stats_args, buffers),
      M(clops_memory_stats_args, limit_bytes)}},
    {"BufferCopyArgs",
     sizeof(struct clops_buffer_copy_args),
     10,
     {M(clops_buffer_copy_args, struct_size), M(clops_buffer_copy_args, wait_count),
      M(clops_buffer_copy_args, stream), M(clops_buffer_copy_args, src),
      M(clops_buffer_copy_args, src_offset), M(clops_buffer_copy_args, dst),
      M(clops_buffer_copy_args, dst_offset), M(clops_buffer_copy_args, bytes),
      M(clops_buffer_copy_args, wait_events), M(clops_buffer_copy_args, event)}},
    {"HostRegisterArgs",
     sizeof(struct clops_host_register_args),
     5,
     {M(clops_host_register_args, struct_size), M(clops_host_register_args, flags),
      M(clops_host_register_args, pool), M(clops_host_register_args, data),
      M(clops_host_register_args, bytes)}},
    {"BufferCreateArgs",
     sizeof(struct clops_buffer_create_args),
     5,
     {M(clops_buffer_create_args, struct_size), M(clops_buffer_create_args, device),
      M(clops_buffer_create_args, pool), M(clops_buffer_create_args, bytes),
      M(clops_buffer_create_args, buffer)}},
};
#undef M

/* The table's members by Clops.jl's constant names: API_X is the pointer at byte 8 + 8 X. */
static const struct {
    const char *constant;
    size_t offset;
} header_members[] = {
    {"API_VERSION", offsetof(struct clops_api, version)},
    {"API_LAST_ERROR", offsetof(struct clops_api, last_error)},
    {"API_STATUS_NAME", offsetof(struct clops_api, status_name)},
    {"API_SET_LOG_CALLBACK", offsetof(struct clops_api, set_log_callback)},
    {"API_DEVICES_LIST", offsetof(struct clops_api, devices_list)},
    {"API_POOL_CREATE_DEFAULT", offsetof(struct clops_api, pool_create_default)},
    {"API_POOL_CREATE_FROM_FILE", offsetof(struct clops_api, pool_create_from_file)},
    {"API_POOL_CREATE_FROM_STRING", offsetof(struct clops_api, pool_create_from_string)},
    {"API_POOL_RELEASE", offsetof(struct clops_api, pool_release)},
    {"API_POOL_DEVICE_COUNT", offsetof(struct clops_api, pool_device_count)},
    {"API_POOL_DEVICE_INFO", offsetof(struct clops_api, pool_device_info)},
    {"API_POOL_STATS", offsetof(struct clops_api, pool_stats)},
    {"API_POOL_OP_STATS", offsetof(struct clops_api, pool_op_stats)},
    {"API_BUFFER_CREATE", offsetof(struct clops_api, buffer_create)},
    {"API_BUFFER_UPLOAD", offsetof(struct clops_api, buffer_upload)},
    {"API_BUFFER_DOWNLOAD", offsetof(struct clops_api, buffer_download)},
    {"API_BUFFER_RELEASE", offsetof(struct clops_api, buffer_release)},
    {"API_BUFFER_SIZE", offsetof(struct clops_api, buffer_size)},
    {"API_OP_COUNT", offsetof(struct clops_api, op_count)},
    {"API_OP_AT", offsetof(struct clops_api, op_at)},
    {"API_OP_FIND", offsetof(struct clops_api, op_find)},
    {"API_OP_INDEX", offsetof(struct clops_api, op_index)},
    {"API_INVOKE", offsetof(struct clops_api, invoke)},
    {"API_POOL_DEVICE_STATS", offsetof(struct clops_api, pool_device_stats)},
    {"API_INVOKE_SIZED", offsetof(struct clops_api, invoke_sized)},
    {"API_CHECK_SIZED", offsetof(struct clops_api, check_sized)},
    {"API_STREAM_CREATE", offsetof(struct clops_api, stream_create)},
    {"API_STREAM_RELEASE", offsetof(struct clops_api, stream_release)},
    {"API_STREAM_WAIT", offsetof(struct clops_api, stream_wait)},
    {"API_SUBMIT", offsetof(struct clops_api, submit)},
    {"API_EVENT_QUERY", offsetof(struct clops_api, event_query)},
    {"API_EVENT_WAIT", offsetof(struct clops_api, event_wait)},
    {"API_EVENT_ON_COMPLETE", offsetof(struct clops_api, event_on_complete)},
    {"API_EVENT_CANCEL", offsetof(struct clops_api, event_cancel)},
    {"API_EVENT_RELEASE", offsetof(struct clops_api, event_release)},
    {"API_EVENT_CL_EVENT", offsetof(struct clops_api, event_cl_event)},
    {"API_POOL_CREATE_FROM_CL", offsetof(struct clops_api, pool_create_from_cl)},
    {"API_BUFFER_WRAP_CL", offsetof(struct clops_api, buffer_wrap_cl)},
    {"API_BUFFER_CL", offsetof(struct clops_api, buffer_cl)},
    {"API_MEMORY_STATS", offsetof(struct clops_api, memory_stats)},
    {"API_BUFFER_COPY", offsetof(struct clops_api, buffer_copy)},
    {"API_HOST_REGISTER", offsetof(struct clops_api, host_register)},
    {"API_HOST_UNREGISTER", offsetof(struct clops_api, host_unregister)},
    {"API_BUFFER_CREATE_ON", offsetof(struct clops_api, buffer_create_on)},
};

/* Size and alignment of a field type as Clops.jl writes it; 0 when unknown. */
static size_t julia_type_size(const char *type, size_t *align)
{
    static const struct {
        const char *prefix;
        size_t size, align;
    } types[] = {{"Ptr{", 8, 8},    {"Int64", 8, 8},  {"UInt64", 8, 8}, {"Float64", 8, 8},
                 {"Cdouble", 8, 8}, {"Int32", 4, 4},  {"UInt32", 4, 4}, {"Cint", 4, 4},
                 {"Int16", 2, 2},   {"UInt16", 2, 2}, {"UInt8", 1, 1},  {"NTuple{4,Int64}", 32, 8}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strncmp(type, types[i].prefix, strlen(types[i].prefix)) == 0) {
            *align = types[i].align;
            return types[i].size;
        }
    return 0;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        text = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (text != NULL &&
            (fseek(f, 0, SEEK_SET) != 0 || fread(text, 1, (size_t)n, f) != (size_t)n)) {
            free(text);
            text = NULL;
        } else if (text != NULL)
            text[n] = '\0';
    }
    fclose(f);
    return text;
}

/* Lays out `struct <name>` of the Julia source and compares it with the header's: the members'
 * names, offsets and sizes, and the struct's size. */
static void check_julia_struct(const char *source, const struct c_struct *want)
{
    char head[96];
    snprintf(head, sizeof head, "\nstruct %s\n", want->julia_name);
    const char *p = strstr(source, head);
    expect(p != NULL, "Clops.jl defines no struct %s", want->julia_name);
    if (p == NULL)
        return;
    p += strlen(head);
    size_t offset = 0, max_align = 1;
    int count = 0;
    for (;;) {
        const char *eol = strchr(p, '\n');
        if (eol == NULL)
            break;
        char line[160];
        size_t len = (size_t)(eol - p) < sizeof line - 1 ? (size_t)(eol - p) : sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol + 1;
        char name[64], type[64];
        if (sscanf(line, " %63[A-Za-z0-9_]::%63s", name, type) != 2) {
            expect(strncmp(line, "end", 3) == 0, "%s: unexpected line '%s'", want->julia_name,
                   line);
            break;
        }
        size_t align = 1, size = julia_type_size(type, &align);
        expect(size > 0, "%s.%s: unknown type %s", want->julia_name, name, type);
        offset = (offset + align - 1) / align * align;
        max_align = align > max_align ? align : max_align;
        if (count < want->count) {
            expect(strcmp(name, want->members[count].name) == 0,
                   "%s: member %d is %s, the header's is %s", want->julia_name, count, name,
                   want->members[count].name);
            expect(offset == want->members[count].offset, "%s.%s at byte %zu, the header's at %zu",
                   want->julia_name, name, offset, want->members[count].offset);
            expect(size == want->members[count].size, "%s.%s is %zu bytes, the header's %zu",
                   want->julia_name, name, size, want->members[count].size);
        }
        offset += size;
        count++;
    }
    size_t total = (offset + max_align - 1) / max_align * max_align;
    expect(count == want->count, "%s has %d members, the header's struct %d", want->julia_name,
           count, want->count);
    expect(total == want->size, "%s is %zu bytes, the header's struct %zu", want->julia_name, total,
           want->size);
}

/* Every mirror and every API_* constant of Clops.jl against abi/clops.h. */
static void test_julia_definitions_match_header(const char *jl_path)
{
    char *source = read_file(jl_path);
    expect(source != NULL, "cannot read %s", jl_path);
    if (source == NULL)
        return;
    const int structs = (int)(sizeof header_structs / sizeof header_structs[0]);
    for (int i = 0; i < structs; i++)
        check_julia_struct(source, &header_structs[i]);
    /* The hosts' rule (hosts/common/loader.h): $CLOPS_LIBRARY alone, else the system's file. */
    expect(strstr(source, "\nconst PLUGIN_FILE = Sys.iswindows() ? \"clops.dll\" : "
                          "\"libclops.so.1\"\n") != NULL,
           "Clops.jl names clops.dll on Windows and libclops.so.1 elsewhere");
    expect(strstr(source, "get(ENV, \"CLOPS_LIBRARY\", \"\")") != NULL &&
               strstr(source, "isempty(named) ? PLUGIN_FILE : named") != NULL,
           "Clops.jl loads $CLOPS_LIBRARY when set, else PLUGIN_FILE");
    int constants = 0;
    for (size_t i = 0; i < sizeof header_members / sizeof header_members[0]; i++) {
        char head[64];
        snprintf(head, sizeof head, "\nconst %s = ", header_members[i].constant);
        const char *p = strstr(source, head);
        if (p == NULL)
            continue; /* a member the module does not name */
        long index = strtol(p + strlen(head), NULL, 10);
        expect((size_t)(8 + 8 * index) == header_members[i].offset,
               "%s = %ld: byte %ld, the header's member is at %zu", header_members[i].constant,
               index, 8 + 8 * index, header_members[i].offset);
        constants++;
    }
    expect(constants >= 26, "Clops.jl names %d table members", constants);
    printf("julia_definitions_match_header: %d structs, %d table indices checked\n", structs,
           constants);
    free(source);
}

int main(int argc, char **argv)
{
    rng_state = (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)rng_state);

    /* load(): $CLOPS_LIBRARY, else PLUGIN_FILE (libclops.so.1 here), RTLD_NOW | RTLD_LOCAL. */
    const char *path = getenv("CLOPS_LIBRARY");
    if (path == NULL || path[0] == '\0')
        path = "libclops.so.1";
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        printf("FAIL: cannot load libclops from %s: %s\n", path, dlerror());
        return 1;
    }
    clops_plugin_entry_fn plugin_entry;
    void *symbol = dlsym(handle, "clops_plugin_entry");
    memcpy(&plugin_entry, &symbol, sizeof plugin_entry); /* POSIX: a function's address */
    if (symbol == NULL || (api = plugin_entry(1)) == NULL) {
        printf("FAIL: %s serves no ABI 1\n", path);
        return 1;
    }
    table = (const unsigned char *)api;

    test_table_offsets();
    test_tensor_bytes_match_header();
    if (argc > 1)
        test_julia_definitions_match_header(argv[1]);
    else
        expect(0, "usage: test_julia_calls PATH/Clops.jl");
    gemm_call gemm = (gemm_call)op_entry("gemm");
    lu_call lu = (lu_call)op_entry("lu");
    solve_call solve = (solve_call)op_entry("solve");
    test_pool_from_missing_file();

    struct clops_pool *pool = NULL;
    int32_t status =
        ((int32_t(*)(struct clops_pool **))api_function(API_POOL_CREATE_DEFAULT))(&pool);
    expect(status == CLOPS_OK && pool != NULL, "pool_create_default: %s", jl_last_error());
    if (pool != NULL && gemm != NULL && lu != NULL && solve != NULL) {
        for (int trans = 0; trans < 4; trans++)
            test_gemm_column_major(pool, gemm, trans & 1, trans >> 1, 1.5, -0.5);
        test_gemm_column_major(pool, gemm, 0, 0, 1, 0);
        test_gemm_error_message(pool, gemm);
        test_lu_known_3x3(pool, lu);
        test_lu_singular_info(pool, lu);
        test_solve_residual(pool, solve);
        test_solve_singular_leaves_b(pool, solve);
    }
    ((void (*)(struct clops_pool *))api_function(API_POOL_RELEASE))(pool);

    if (failures > 0) {
        printf("%d of %d checks FAILED\n", failures, checks);
        return 1;
    }
    printf("All %d Julia ABI call checks PASS\n", checks);
    return 0;
}
