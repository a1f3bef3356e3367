/* test_ilp64.c — the ILP64 entry points (suffix 64_, int64_t INTEGERs, as Julia calls them through
 * libblastrampoline) on column-major matrices with padded leading dimensions: dgemm_64_ against a
 * long-double reference and dgemm_; dgesv_64_ and sgetrf_64_ + sgetrs_64_ against their LP64
 * twins (the same pivots, widened to int64, and the same factors and solutions) and by LAPACK's
 * residual ratio; a singular matrix's INFO and a quick return past 32 bits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lapack.h"

static int failures;

static void check(int ok, const char *what, const char *detail)
{
    printf("%s %s: %s\n", ok ? "PASS" : "FAIL", what, detail);
    failures += !ok;
}

static unsigned long long rng_state = 0x2545f4914f6cdd1dull;
static double uniform(void) /* in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

/* An INFO or pivot written as 32 bits into an int64_t would leave this pattern's high half. */
static const int64_t unwritten = (int64_t)0x5a5a5a5a5a5a5a5aull;

static void test_dgemm_64(void)
{
    enum { M = 37, N = 23, K = 41, LDA = K + 3, LDB = K + 2, LDC = M + 5 };
    static double a[LDA * M], b[LDB * N], c0[LDC * N], c64[LDC * N], c32[LDC * N];
    for (int i = 0; i < LDA * M; i++)
        a[i] = uniform();
    for (int i = 0; i < LDB * N; i++)
        b[i] = uniform();
    for (int i = 0; i < LDC * N; i++)
        c0[i] = c64[i] = c32[i] = uniform();
    const double alpha = -0.5, beta = 1.75;
    const int64_t m = M, n = N, k = K, lda = LDA, ldb = LDB, ldc = LDC;
    dgemm_64_("T", "N", &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c64, &ldc, 1, 1);
    const int m32 = M, n32 = N, k32 = K, lda32 = LDA, ldb32 = LDB, ldc32 = LDC;
    dgemm_("T", "N", &m32, &n32, &k32, &alpha, a, &lda32, b, &ldb32, &beta, c32, &ldc32, 1, 1);
    double worst = 0;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < LDC; i++) {
            long double want = c0[i + j * LDC];
            if (i < M) {
                long double s = 0;
                for (int p = 0; p < K; p++)
                    s += (long double)a[p + i * LDA] * b[p + j * LDB];
                want = alpha * s + beta * want;
            }
            double e = (double)fabsl(want - c64[i + j * LDC]) / (K + 1);
            worst = isnan(e) || e > worst ? e : worst;
        }
    char detail[96];
    snprintf(detail, sizeof detail, "error %.3g <= 1e-15, = dgemm_'s: %d", worst,
             memcmp(c64, c32, sizeof c64) == 0);
    check(worst <= 1e-15 && memcmp(c64, c32, sizeof c64) == 0, "dgemm_64_ TN 37x23x41, padded ld",
          detail);
}

/* ||A x - b|| / (||A|| ||x|| N eps), LAPACK's test ratio, in long double. */
static double solve_ratio(int n, const double *a, int lda, const double *x, const double *b,
                          int trans, double eps)
{
    long double r = 0, anorm = 0, xnorm = 0;
    for (int i = 0; i < n; i++) {
        long double s = -(long double)b[i], row = 0;
        for (int p = 0; p < n; p++) {
            long double aip = trans ? a[p + (size_t)i * lda] : a[i + (size_t)p * lda];
            s += aip * x[p];
            row += fabsl(aip);
        }
        r = fabsl(s) > r ? fabsl(s) : r;
        anorm = row > anorm ? row : anorm;
        xnorm = fabsl((long double)x[i]) > xnorm ? fabsl((long double)x[i]) : xnorm;
    }
    return (double)(r / (anorm * xnorm * n * eps));
}

static int pivots_equal(int n, const int64_t *wide, const int *narrow)
{
    int same = 1;
    for (int i = 0; i < n; i++)
        same &= wide[i] == narrow[i];
    return same;
}

static void test_dgesv_64(void)
{
    enum { N = 53, LDA = N + 4, NRHS = 3, LDB = N + 1 };
    static double a[LDA * N], a64[LDA * N], a32[LDA * N], b[LDB * NRHS], x64[LDB * NRHS],
        x32[LDB * NRHS];
    for (int i = 0; i < LDA * N; i++)
        a[i] = a64[i] = a32[i] = uniform();
    for (int i = 0; i < LDB * NRHS; i++)
        b[i] = x64[i] = x32[i] = uniform();
    int64_t n = N, nrhs = NRHS, lda = LDA, ldb = LDB, ipiv64[N], info64 = unwritten;
    for (int i = 0; i < N; i++)
        ipiv64[i] = unwritten;
    dgesv_64_(&n, &nrhs, a64, &lda, ipiv64, x64, &ldb, &info64);
    int n32 = N, nrhs32 = NRHS, lda32 = LDA, ldb32 = LDB, ipiv32[N], info32 = -99;
    dgesv_(&n32, &nrhs32, a32, &lda32, ipiv32, x32, &ldb32, &info32);
    double worst = 0;
    for (int j = 0; j < NRHS; j++) {
        double r = solve_ratio(N, a, LDA, x64 + j * LDB, b + j * LDB, 0, 2.220446049250313e-16);
        worst = isnan(r) || r > worst ? r : worst;
    }
    const int same = pivots_equal(N, ipiv64, ipiv32) && memcmp(a64, a32, sizeof a64) == 0 &&
                     memcmp(x64, x32, sizeof x64) == 0;
    char detail[128];
    snprintf(detail, sizeof detail, "info %lld, ratio %.3g < 30, ipiv/LU/X = dgesv_'s: %d",
             (long long)info64, worst, same);
    check(info64 == 0 && worst < 30 && same, "dgesv_64_ 53x53, 3 rhs", detail);

    /* Column 2 is zero: INFO = 2 in all 64 bits, b untouched. */
    double s[9] = {2, 1, 1, 0, 0, 0, 1, 3, 5}, sb[3] = {1, 2, 3};
    int64_t three = 3, one = 1, sp[3];
    info64 = unwritten;
    dgesv_64_(&three, &one, s, &three, sp, sb, &three, &info64);
    snprintf(detail, sizeof detail, "info %lld (want 2), b untouched", (long long)info64);
    check(info64 == 2 && sb[0] == 1 && sb[1] == 2 && sb[2] == 3, "dgesv_64_ singular", detail);
}

static void test_sgetrf_sgetrs_64(void)
{
    enum { M = 29, LDA = M + 3, NRHS = 2, LDB = M + 2 };
    static float a[LDA * M], lu64[LDA * M], lu32[LDA * M], b[LDB * NRHS], x64[LDB * NRHS],
        x32[LDB * NRHS];
    for (int i = 0; i < LDA * M; i++)
        a[i] = lu64[i] = lu32[i] = (float)uniform();
    for (int i = 0; i < LDB * NRHS; i++)
        b[i] = (float)uniform();
    int64_t n = M, nrhs = NRHS, lda = LDA, ldb = LDB, ipiv64[M], info64 = unwritten;
    int n32 = M, nrhs32 = NRHS, lda32 = LDA, ldb32 = LDB, ipiv32[M], info32 = -99;
    sgetrf_64_(&n, &n, lu64, &lda, ipiv64, &info64);
    sgetrf_(&n32, &n32, lu32, &lda32, ipiv32, &info32);
    const int same_lu = info64 == 0 && info32 == 0 && pivots_equal(M, ipiv64, ipiv32) &&
                        memcmp(lu64, lu32, sizeof lu64) == 0;
    check(same_lu, "sgetrf_64_ 29x29 lda=32", "info 0, ipiv and LU = sgetrf_'s");
    for (int t = 0; t < 2; t++) {
        memcpy(x64, b, sizeof x64);
        memcpy(x32, b, sizeof x32);
        info64 = unwritten;
        sgetrs_64_(t ? "T" : "N", &n, &nrhs, lu64, &lda, ipiv64, x64, &ldb, &info64, 1);
        sgetrs_(t ? "T" : "N", &n32, &nrhs32, lu32, &lda32, ipiv32, x32, &ldb32, &info32, 1);
        double worst = 0, ad[LDA * M], xd[M], bd[M];
        for (int i = 0; i < LDA * M; i++)
            ad[i] = a[i];
        for (int j = 0; j < NRHS; j++) {
            for (int i = 0; i < M; i++)
                xd[i] = x64[i + j * LDB], bd[i] = b[i + j * LDB];
            double r = solve_ratio(M, ad, LDA, xd, bd, t, 1.1920929e-7);
            worst = isnan(r) || r > worst ? r : worst;
        }
        char detail[128];
        snprintf(detail, sizeof detail, "info %lld, ratio %.3g < 30, X = sgetrs_'s: %d",
                 (long long)info64, worst, memcmp(x64, x32, sizeof x64) == 0);
        check(info64 == 0 && worst < 30 && memcmp(x64, x32, sizeof x64) == 0,
              t ? "sgetrs_64_ trans='T', 2 rhs" : "sgetrs_64_ trans='N', 2 rhs", detail);
    }
}

/* M past 2^32 with N = 0 is LAPACK's quick return, not a call clops has to take. */
static void test_quick_return_past_32_bits(void)
{
    int64_t m = (int64_t)1 << 33, zero = 0, info = unwritten, ipiv[1] = {unwritten};
    double a[1] = {7};
    dgetrf_64_(&m, &zero, a, &m, ipiv, &info);
    check(info == 0 && a[0] == 7 && ipiv[0] == unwritten, "dgetrf_64_ M=2^33 N=0",
          "info 0, nothing touched");
}

int main(void)
{
    test_dgemm_64();
    test_dgesv_64();
    test_sgetrf_sgetrs_64();
    test_quick_return_past_32_bits();
    int calls = clops_lapack_calls();
    char detail[64];
    snprintf(detail, sizeof detail, "%d calls (want >= 8)", calls);
    check(calls >= 8, "calls ran in clops", detail);
    printf("%s\n", failures == 0 ? "ALL PASS" : "FAILED");
    return failures == 0 ? 0 : 1;
}
