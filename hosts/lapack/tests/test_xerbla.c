/* test_xerbla.c — a program's own xerbla_ replaces libclops_lapack's: every bad argument reaches
 * it with LAPACK's routine name and the argument's position, in LAPACK's order, and the call
 * writes nothing. */
#include <stdio.h>
#include <string.h>

#include "lapack.h"
#include "xerbla_expect.h"

static int seen_position, seen_count;

void xerbla_(const char *srname, const int *info, size_t srname_len)
{
    remember_name(srname, srname_len);
    seen_position = *info;
    seen_count++;
}

static int failures;

static void expect(const char *what, const char *name, int position, int info, int want_info)
{
    int ok = seen_count == 1 && strcmp(seen_name, name) == 0 && seen_position == position &&
             info == want_info;
    printf("%s %s: xerbla_ got %d call(s), '%s' position %d (want '%s' %d); info %d (want %d)\n",
           ok ? "PASS" : "FAIL", what, seen_count, seen_name, seen_position, name, position, info,
           want_info);
    failures += !ok;
    seen_count = 0;
    seen_name[0] = '\0';
    seen_position = 0;
}

/* expect() for a routine with INFO, which must be -position. INFO is then set to 7, a value no
 * rejected call leaves, so that the next call must write it. */
static void expect_info(const char *what, const char *name, int position, int *info)
{
    expect(what, name, position, *info, -position);
    *info = 7;
}

/* dgemm_ calls with one bad argument (N is 4 throughout), in LAPACK's order of the checks. */
static const struct dgemm_case {
    const char *what, *transa, *transb;
    int m, k, lda, ldb, ldc, position;
} dgemm_cases[] = {
    {"dgemm lda=3 < M=4", "N", "N", 4, 4, 3, 4, 4, 8},
    {"dgemm transa='X' is reported before lda", "X", "N", 4, 4, 3, 4, 4, 1},
    {"dgemm transb='q'", "n", "q", 4, 4, 4, 4, 4, 2},
    {"dgemm M<0", "N", "N", -1, 4, 4, 4, 4, 3},
    {"dgemm K<0", "N", "N", 4, -1, 4, 4, 4, 5},
    /* transb = 'T': B is N x K, so ldb >= N = 4 */
    {"dgemm ldb=3 < N (B transposed)", "T", "t", 4, 4, 4, 3, 4, 10},
    {"dgemm ldc=3 < M", "C", "N", 4, 4, 4, 4, 3, 13},
};

int main(void)
{
    double a[16], b[16], c[16];
    float sa[16], sb[16], sc[16];
    for (int i = 0; i < 16; i++)
        a[i] = b[i] = c[i] = sa[i] = sb[i] = sc[i] = (float)(i + 1);
    const double alpha = 1.0, beta = 0.0;
    const float salpha = 1.0f, sbeta = 0.0f;
    int m = 4, n = 4, k = 4, ld = 4, small = 3, neg = -1, one = 1, ipiv[4] = {0}, info = 7;

    for (size_t i = 0; i < sizeof dgemm_cases / sizeof dgemm_cases[0]; i++) {
        const struct dgemm_case *t = &dgemm_cases[i];
        dgemm_(t->transa, t->transb, &t->m, &n, &t->k, &alpha, a, &t->lda, b, &t->ldb, &beta, c,
               &t->ldc, 1, 1);
        expect(t->what, "DGEMM", t->position, 0, 0);
    }
    sgemm_("N", "N", &m, &n, &k, &salpha, sa, &small, sb, &ld, &sbeta, sc, &ld, 1, 1);
    expect("sgemm lda=3", "SGEMM", 8, 0, 0);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 4, 4, 4, 1.0, a, 3, b, 4, 0.0, c, 4);
    expect("cblas_dgemm col-major lda=3", "DGEMM", 8, 0, 0);
    /* Row-major is the column-major call on the transposes: A is B's place (position 10). */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 4, 4, 4, 1.0, a, 3, b, 4, 0.0, c, 4);
    expect("cblas_dgemm row-major lda=3", "DGEMM", 10, 0, 0);
    cblas_dgemm((enum CBLAS_ORDER)7, CblasNoTrans, CblasNoTrans, 4, 4, 4, 1.0, a, 4, b, 4, 0.0, c,
                4);
    expect("cblas_dgemm bad order", "cblas_dgemm", 1, 0, 0);

    dgetrf_(&neg, &n, a, &ld, ipiv, &info);
    expect_info("dgetrf M=-1", "DGETRF", 1, &info);
    sgetrf_(&m, &neg, sa, &ld, ipiv, &info);
    expect_info("sgetrf N=-1", "SGETRF", 2, &info);
    dgetrf_(&m, &n, a, &small, ipiv, &info);
    expect_info("dgetrf lda=3 < M", "DGETRF", 4, &info);
    dgetrs_("X", &n, &one, a, &ld, ipiv, b, &ld, &info, 1);
    expect_info("dgetrs trans='X'", "DGETRS", 1, &info);
    dgetrs_("T", &n, &neg, a, &ld, ipiv, b, &ld, &info, 1);
    expect_info("dgetrs NRHS<0", "DGETRS", 3, &info);
    sgetrs_("N", &n, &one, sa, &small, ipiv, sb, &ld, &info, 1);
    expect_info("sgetrs lda=3", "SGETRS", 5, &info);
    dgetrs_("C", &n, &one, a, &ld, ipiv, b, &small, &info, 1);
    expect_info("dgetrs ldb=3", "DGETRS", 8, &info);
    dgesv_(&neg, &one, a, &ld, ipiv, b, &ld, &info);
    expect_info("dgesv N<0", "DGESV", 1, &info);
    dgesv_(&n, &neg, a, &ld, ipiv, b, &ld, &info);
    expect_info("dgesv NRHS<0", "DGESV", 2, &info);
    sgesv_(&n, &one, sa, &small, ipiv, sb, &ld, &info);
    expect_info("sgesv lda=3", "SGESV", 4, &info);
    dgesv_(&n, &one, a, &ld, ipiv, b, &small, &info);
    expect_info("dgesv ldb=3", "DGESV", 7, &info);

    int untouched = 1;
    for (int i = 0; i < 16; i++)
        untouched &= a[i] == i + 1 && b[i] == i + 1 && c[i] == i + 1 && sa[i] == i + 1 &&
                     sb[i] == i + 1 && sc[i] == i + 1 && (i >= 4 || ipiv[i] == 0);
    return finish(untouched, failures);
}
