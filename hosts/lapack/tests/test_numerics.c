/* test_numerics.c — every entry point of libclops_lapack from C, on column-major matrices with
 * padded leading dimensions and awkward sizes, against long-double references: gemm in every
 * transpose combination and both CBLAS orders, LAPACK's quick returns (alpha = 0 never reads A
 * or B, beta = 0 never reads C), getrf's pivots and singular info, getrs with both transposes,
 * gesv; and, where the system's liblapack.so.3 can be loaded, getrf's pivots and factors
 * against reference LAPACK's on the same matrices. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lapack.h"

static int failures;

static void check(int ok, const char *fmt, const char *what, double value, double bound)
{
    printf("%s %s: ", ok ? "PASS" : "FAIL", what);
    printf(fmt, value, bound);
    printf("\n");
    failures += !ok;
}

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void) /* in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

static double *random_matrix(int rows, int cols, int ld)
{
    double *m = malloc(sizeof *m * (size_t)ld * (size_t)cols);
    for (int i = 0; i < ld * cols; i++)
        m[i] = uniform();
    (void)rows;
    return m;
}

/* op(X)(i, j) of a column-major X. */
static long double at(const double *x, int ld, int trans, int i, int j)
{
    return trans ? x[j + (size_t)i * ld] : x[i + (size_t)j * ld];
}

/* max |C - (alpha op(A) op(B) + beta C0)| / (K + 1), over the M x N part; rows M .. rows - 1
 * (C's padding, when rows = ldc) must still equal C0's. */
static double gemm_error(int ta, int tb, int m, int n, int k, double alpha, const double *a,
                         int lda, const double *b, int ldb, double beta, const double *c0,
                         const double *c, int ldc, int rows)
{
    double worst = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < rows; i++) {
            long double want = c0[i + (size_t)j * ldc];
            if (i < m) {
                long double s = 0;
                for (int p = 0; p < k; p++)
                    s += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
                want = alpha * s + beta * want;
            }
            double e = (double)fabsl(want - c[i + (size_t)j * ldc]) / (k + 1);
            worst = isnan(e) || e > worst ? e : worst;
        }
    return worst;
}

static void test_dgemm(char transa, char transb, int m, int n, int k)
{
    int ta = transa != 'N', tb = transb != 'N';
    int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 1, ldc = m + 2;
    double *a = random_matrix(lda, ta ? m : k, lda), *b = random_matrix(ldb, tb ? k : n, ldb);
    double *c0 = random_matrix(ldc, n, ldc), *c = malloc(sizeof *c * (size_t)ldc * n);
    memcpy(c, c0, sizeof *c * (size_t)ldc * n);
    const double alpha = 0.75, beta = -1.25;
    dgemm_(&transa, &transb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
    char what[96];
    snprintf(what, sizeof what, "dgemm %c%c %dx%dx%d, padded ld", transa, transb, m, n, k);
    double e = gemm_error(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, c, ldc, ldc);
    check(e < 1e-15, "error %.3g <= %.3g", what, e, 1e-15);
    free(a), free(b), free(c0), free(c);
}

/* LAPACK's blocked update A22 -= A21 A12 inside one array: no element is shared, but the
 * address ranges of A21, A12 and A22 interleave. */
static void test_dgemm_blocks_of_one_array(void)
{
    enum { N = 40, LD = 43, JB = 7 };
    double *x = random_matrix(LD, N, LD), x0[LD * N];
    memcpy(x0, x, sizeof x0);
    const int m = N - JB, n = N - JB, k = JB, ld = LD;
    const double minus_one = -1.0, one = 1.0;
    const int before = clops_lapack_calls();
    dgemm_("No transpose", "No transpose", &m, &n, &k, &minus_one, x + JB, &ld, x + JB * LD, &ld,
           &one, x + JB + JB * LD, &ld, 12, 12);
    double e = gemm_error(0, 0, m, n, k, -1.0, x0 + JB, LD, x0 + JB * LD, LD, 1.0,
                          x0 + JB + JB * LD, x + JB + JB * LD, LD, m);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++)
            if ((i < JB || j < JB) && x[i + j * LD] != x0[i + j * LD])
                e = INFINITY; /* A21, A12 and A11 are read only */
    check(e < 1e-15 && clops_lapack_calls() == before + 1, "error %.3g <= %.3g, in clops",
          "dgemm A22 -= A21 A12 within one array", e, 1e-15);
    free(x);
}

static void test_sgemm(void)
{
    int m = 37, n = 29, k = 53, lda = 40, ldb = 53, ldc = 37;
    float *a = malloc(sizeof *a * lda * k), *b = malloc(sizeof *b * ldb * n),
          *c = malloc(sizeof *c * ldc * n);
    for (int i = 0; i < lda * k; i++)
        a[i] = (float)uniform();
    for (int i = 0; i < ldb * n; i++)
        b[i] = (float)uniform();
    for (int i = 0; i < ldc * n; i++)
        c[i] = NAN; /* beta = 0: never read */
    const float alpha = 1.5f, beta = 0.0f;
    sgemm_("n", "N", &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
    double worst = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            long double s = 0;
            for (int p = 0; p < k; p++)
                s += (long double)a[i + p * lda] * b[p + j * ldb];
            double e = (double)fabsl(alpha * s - c[i + j * ldc]) / k;
            worst = isnan(e) || e > worst ? (isnan(e) ? INFINITY : e) : worst;
        }
    check(worst < 1e-6, "error %.3g <= %.3g", "sgemm NN 37x29x53, beta=0 ignores NaN in C", worst,
          1e-6);
    free(a), free(b), free(c);
}

/* Row-major C = A B through CBLAS, with A transposed, against the long-double product. */
static void test_cblas(void)
{
    enum { M = 11, N = 7, K = 13, LDA = M + 1, LDB = N + 2, LDC = N + 3 };
    double a[K * LDA], b[K * LDB], c[M * LDC], c0[M * LDC];
    for (int i = 0; i < K * LDA; i++)
        a[i] = uniform();
    for (int i = 0; i < K * LDB; i++)
        b[i] = uniform();
    for (int i = 0; i < M * LDC; i++)
        c[i] = c0[i] = uniform();
    /* A stored row-major K x M (transposed: op(A) = A^T is M x K); B row-major K x N. */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, N, K, 2.0, a, LDA, b, LDB, 0.5, c, LDC);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < LDC; j++) {
            long double want = c0[i * LDC + j];
            if (j < N) {
                long double s = 0;
                for (int p = 0; p < K; p++)
                    s += (long double)a[p * LDA + i] * b[p * LDB + j];
                want = 2.0L * s + 0.5L * want;
            }
            double e = (double)fabsl(want - c[i * LDC + j]);
            worst = isnan(e) || e > worst ? e : worst;
        }
    check(worst < 1e-14, "error %.3g <= %.3g", "cblas_dgemm row-major, A transposed", worst, 1e-14);

    float sa[6] = {1, 2, 3, 4, 5, 6}, sb[6] = {1, 0, 0, 1, 1, 1}, sc[4] = {0};
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 3, 1.0f, sa, 3, sb, 2, 0.0f, sc,
                2);
    double e = fabs(sc[0] - 4) + fabs(sc[1] - 5) + fabs(sc[2] - 10) + fabs(sc[3] - 11);
    check(e == 0, "|C - [4 5; 10 11]| = %g (want %g)", "cblas_sgemm row-major 2x3 * 3x2", e, 0);
}

/* alpha = 0: C = beta C without reading A or B (NaN there must not spread), as the reference. */
static void test_gemm_alpha_zero(void)
{
    double a[4] = {NAN, NAN, NAN, NAN}, b[4] = {NAN, NAN, NAN, NAN}, c[4] = {1, 2, 3, 4};
    const double alpha = 0.0, beta = 3.0, one = 1.0;
    int two = 2, zero = 0;
    dgemm_("N", "N", &two, &two, &two, &alpha, a, &two, b, &two, &beta, c, &two, 1, 1);
    double e = fabs(c[0] - 3) + fabs(c[1] - 6) + fabs(c[2] - 9) + fabs(c[3] - 12);
    check(e == 0, "|C - 3 C0| = %g (want %g)", "dgemm alpha=0 scales C, ignores NaN A, B", e, 0);
    /* K = 0 and beta = 1: a quick return, C untouched. */
    dgemm_("N", "N", &two, &two, &zero, &alpha, a, &two, b, &two, &one, c, &two, 1, 1);
    e = fabs(c[0] - 3) + fabs(c[3] - 12);
    check(e == 0, "|C - C0| = %g (want %g)", "dgemm K=0 beta=1 leaves C", e, 0);
}

/* ||A x - b|| / (||A|| ||x|| N eps), LAPACK's test ratio, for column j of x and b. */
static double solve_ratio(int n, const double *a, int lda, const double *x, const double *b,
                          int trans)
{
    long double r = 0, anorm = 0, xnorm = 0;
    for (int i = 0; i < n; i++) {
        long double s = -(long double)b[i], row = 0;
        for (int p = 0; p < n; p++) {
            s += at(a, lda, trans, i, p) * x[p];
            row += fabsl(at(a, lda, trans, i, p));
        }
        r = fabsl(s) > r ? fabsl(s) : r;
        anorm = row > anorm ? row : anorm;
        xnorm = fabsl((long double)x[i]) > xnorm ? fabsl((long double)x[i]) : xnorm;
    }
    return (double)(r / (anorm * xnorm * n * 2.220446049250313e-16L));
}

static void test_getrf_getrs_gesv(void)
{
    enum { N = 45, LDA = 48, NRHS = 3, LDB = 50 };
    double *a = random_matrix(LDA, N, LDA), lu[LDA * N], b[LDB * NRHS], x[LDB * NRHS];
    int ipiv[N], info = -99, n = N, nrhs = NRHS, lda = LDA, ldb = LDB;
    memcpy(lu, a, sizeof lu);
    for (int i = 0; i < LDB * NRHS; i++)
        b[i] = x[i] = uniform();
    dgetrf_(&n, &n, lu, &lda, ipiv, &info);
    int pivots_ok = info == 0;
    for (int i = 0; i < N; i++)
        pivots_ok &= ipiv[i] >= i + 1 && ipiv[i] <= N;
    check(pivots_ok, "info %g, pivots in [i, N]: %g", "dgetrf 45x45 lda=48", info, pivots_ok);
    for (int t = 0; t < 2; t++) {
        memcpy(x, b, sizeof x);
        dgetrs_(t ? "T" : "N", &n, &nrhs, lu, &lda, ipiv, x, &ldb, &info, 1);
        double worst = 0;
        for (int j = 0; j < NRHS; j++) {
            double r = solve_ratio(N, a, LDA, x + j * LDB, b + j * LDB, t);
            worst = isnan(r) || r > worst ? r : worst;
        }
        check(info == 0 && worst < 30, "ratio %.3g < %g",
              t ? "dgetrs trans='T' 45x45, 3 rhs" : "dgetrs trans='N' 45x45, 3 rhs", worst, 30);
    }
    double a2[LDA * N];
    int ipiv2[N];
    memcpy(a2, a, sizeof a2);
    memcpy(x, b, sizeof x);
    dgesv_(&n, &nrhs, a2, &lda, ipiv2, x, &ldb, &info);
    double worst = 0;
    for (int j = 0; j < NRHS; j++) {
        double r = solve_ratio(N, a, LDA, x + j * LDB, b + j * LDB, 0);
        worst = isnan(r) || r > worst ? r : worst;
    }
    check(info == 0 && worst < 30 && memcmp(ipiv, ipiv2, sizeof ipiv) == 0 &&
              memcmp(a2, lu, sizeof lu) == 0,
          "ratio %.3g < %g, factors and pivots = dgetrf's", "dgesv 45x45, 3 rhs", worst, 30);
    free(a);

    /* A singular matrix: column 2 is zero, so U(2,2) = 0 and info = 2; gesv leaves b alone. */
    double s[9] = {2, 1, 1, 0, 0, 0, 1, 3, 5}, sb[3] = {1, 2, 3};
    int three = 3, one = 1, sp[3];
    dgesv_(&three, &one, s, &three, sp, sb, &three, &info);
    check(info == 2 && sb[0] == 1 && sb[1] == 2 && sb[2] == 3, "info %g (want %g), b untouched",
          "dgesv singular", info, 2);

    /* sgetrf on a wide 3x5 matrix whose elimination is exact in binary: rows 2 and 3 are
     * chosen as pivots (ipiv = {2, 3, 3}), U(3,3) comes out exactly 0 (info = 3), and the
     * factorization still completes: U's last row is [0 -0.5 1] from column 3. */
    float w[15] = {1, 4, 2, 2, 5, 1, 3, 6, 0, 0, 1, 0, 1, 1, 1};
    int mm = 3, nn = 5, wp[3];
    sgetrf_(&mm, &nn, w, &mm, wp, &info);
    int exact = wp[0] == 2 && wp[1] == 3 && wp[2] == 3 && w[0] == 4 && w[4] == -1.5f && w[8] == 0 &&
                w[11] == -0.5f && w[14] == 1;
    check(info == 3 && exact, "info %g (want 3), ipiv {2,3,3} and U exact: %g",
          "sgetrf 3x5 singular", info, exact);
}

typedef void getrf_fn(const int *, const int *, double *, const int *, int *, int *);

/* Reference LAPACK's dgetrf on the same M x N matrix: identical pivots (random entries do not
 * tie), factors equal to rounding. Its own dgemm_ calls (blocked updates inside one array)
 * resolve to this program's, libclops_lapack's, so they are exercised too. (RTLD_DEEPBIND,
 * which would keep them on the system BLAS, is refused by the sanitizers.) */
static void test_getrf_matches_reference(int m, int n, int lda)
{
    void *lapack = dlopen("liblapack.so.3", RTLD_NOW | RTLD_LOCAL);
    getrf_fn *ref = lapack != NULL ? (getrf_fn *)dlsym(lapack, "dgetrf_") : NULL;
    if (ref == NULL) {
        printf("SKIP dgetrf against reference LAPACK: liblapack.so.3 not loadable\n");
        return;
    }
    double *a = random_matrix(lda, n, lda), *b = malloc(sizeof *b * (size_t)lda * n);
    memcpy(b, a, sizeof *b * (size_t)lda * n);
    int k = m < n ? m : n, ipa[64], ipb[64], ia = -9, ib = -9;
    dgetrf_(&m, &n, a, &lda, ipa, &ia);
    ref(&m, &n, b, &lda, ipb, &ib);
    double worst = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < lda; i++) {
            double e = fabs(a[i + (size_t)j * lda] - b[i + (size_t)j * lda]);
            worst = isnan(e) || e > worst ? e : worst;
        }
    char what[80];
    snprintf(what, sizeof what, "dgetrf %dx%d lda=%d = reference LAPACK (info, ipiv, LU)", m, n,
             lda);
    check(ia == ib && memcmp(ipa, ipb, sizeof *ipa * (size_t)k) == 0 && worst < 1e-12,
          "max |LU - LU_ref| = %.3g < %g", what, worst, 1e-12);
    free(a), free(b);
    dlclose(lapack);
}

int main(void)
{
    const char t[3] = {'N', 'T', 'C'};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            test_dgemm(t[i], t[j], 33, 21, 47);
    test_dgemm('N', 'N', 1, 1, 1);
    test_dgemm_blocks_of_one_array();
    test_sgemm();
    test_cblas();
    test_gemm_alpha_zero();
    test_getrf_getrs_gesv();
    test_getrf_matches_reference(50, 30, 53);
    test_getrf_matches_reference(24, 41, 24);
    int calls = clops_lapack_calls();
    check(calls >= 16, "%g calls (want >= %g)", "calls ran in clops", calls, 16);
    printf("%s\n", failures == 0 ? "ALL PASS" : "FAILED");
    return failures == 0 ? 0 : 1;
}
