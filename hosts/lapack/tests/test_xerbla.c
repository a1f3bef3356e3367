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

int main(void)
{
    double a[16], b[16], c[16];
    float sa[16], sb[16], sc[16];
    for (int i = 0; i < 16; i++)
        a[i] = b[i] = c[i] = sa[i] = sb[i] = sc[i] = (float)(i + 1);
    const double alpha = 1.0, beta = 0.0;
    const float salpha = 1.0f, sbeta = 0.0f;
    int m = 4, n = 4, k = 4, ld = 4, small = 3, neg = -1, one = 1, ipiv[4] = {0}, info = 7;

    dgemm_("N", "N", &m, &n, &k, &alpha, a, &small, b, &ld, &beta, c, &ld, 1, 1);
    expect("dgemm lda=3 < M=4", "DGEMM", 8, 0, 0);
    dgemm_("X", "N", &m, &n, &k, &alpha, a, &small, b, &ld, &beta, c, &ld, 1, 1);
    expect("dgemm transa='X' is reported before lda", "DGEMM", 1, 0, 0);
    dgemm_("n", "q", &m, &n, &k, &alpha, a, &ld, b, &ld, &beta, c, &ld, 1, 1);
    expect("dgemm transb='q'", "DGEMM", 2, 0, 0);
    dgemm_("N", "N", &neg, &n, &k, &alpha, a, &ld, b, &ld, &beta, c, &ld, 1, 1);
    expect("dgemm M<0", "DGEMM", 3, 0, 0);
    dgemm_("N", "N", &m, &n, &neg, &alpha, a, &ld, b, &ld, &beta, c, &ld, 1, 1);
    expect("dgemm K<0", "DGEMM", 5, 0, 0);
    /* transb = 'T': B is N x K, so ldb >= N = 4 */
    dgemm_("T", "t", &m, &n, &k, &alpha, a, &ld, b, &small, &beta, c, &ld, 1, 1);
    expect("dgemm ldb=3 < N (B transposed)", "DGEMM", 10, 0, 0);
    dgemm_("C", "N", &m, &n, &k, &alpha, a, &ld, b, &ld, &beta, c, &small, 1, 1);
    expect("dgemm ldc=3 < M", "DGEMM", 13, 0, 0);
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
    expect("dgetrf M=-1", "DGETRF", 1, info, -1);
    info = 7;
    sgetrf_(&m, &neg, sa, &ld, ipiv, &info);
    expect("sgetrf N=-1", "SGETRF", 2, info, -2);
    info = 7;
    dgetrf_(&m, &n, a, &small, ipiv, &info);
    expect("dgetrf lda=3 < M", "DGETRF", 4, info, -4);
    info = 7;
    dgetrs_("X", &n, &one, a, &ld, ipiv, b, &ld, &info, 1);
    expect("dgetrs trans='X'", "DGETRS", 1, info, -1);
    info = 7;
    dgetrs_("T", &n, &neg, a, &ld, ipiv, b, &ld, &info, 1);
    expect("dgetrs NRHS<0", "DGETRS", 3, info, -3);
    info = 7;
    sgetrs_("N", &n, &one, sa, &small, ipiv, sb, &ld, &info, 1);
    expect("sgetrs lda=3", "SGETRS", 5, info, -5);
    info = 7;
    dgetrs_("C", &n, &one, a, &ld, ipiv, b, &small, &info, 1);
    expect("dgetrs ldb=3", "DGETRS", 8, info, -8);
    info = 7;
    dgesv_(&neg, &one, a, &ld, ipiv, b, &ld, &info);
    expect("dgesv N<0", "DGESV", 1, info, -1);
    info = 7;
    dgesv_(&n, &neg, a, &ld, ipiv, b, &ld, &info);
    expect("dgesv NRHS<0", "DGESV", 2, info, -2);
    info = 7;
    sgesv_(&n, &one, sa, &small, ipiv, sb, &ld, &info);
    expect("sgesv lda=3", "SGESV", 4, info, -4);
    info = 7;
    dgesv_(&n, &one, a, &ld, ipiv, b, &small, &info);
    expect("dgesv ldb=3", "DGESV", 7, info, -7);

    int untouched = 1;
    for (int i = 0; i < 16; i++)
        untouched &= a[i] == i + 1 && b[i] == i + 1 && c[i] == i + 1 && sa[i] == i + 1 &&
                     sb[i] == i + 1 && sc[i] == i + 1 && (i >= 4 || ipiv[i] == 0);
    return finish(untouched, failures);
}
