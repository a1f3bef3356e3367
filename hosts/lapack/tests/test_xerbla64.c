/* test_xerbla64.c — a program's own xerbla_64_ replaces libclops_lapack's: a bad argument to an
 * ILP64 routine reaches it (not xerbla_) with LAPACK's routine name and the argument's position,
 * INFO = -position in all 64 bits, and the call writes nothing. An argument LAPACK accepts but
 * clops cannot take (beyond INT32_MAX, with no other ILP64 library to run it) is reported the
 * same way. A bad argument to an LP64 routine still goes to xerbla_. */
#include <stdio.h>
#include <string.h>

#include "lapack.h"
#include "xerbla_expect.h"

static int64_t seen_position;
static int seen_64, seen_32;

static void remember(const char *srname, size_t srname_len, int64_t position)
{
    remember_name(srname, srname_len);
    seen_position = position;
}

void xerbla_64_(const char *srname, const int64_t *info, size_t srname_len)
{
    remember(srname, srname_len, *info);
    seen_64++;
}

void xerbla_(const char *srname, const int *info, size_t srname_len)
{
    remember(srname, srname_len, *info);
    seen_32++;
}

static int failures;

/* want_64: whether xerbla_64_ (else xerbla_) must have been the one called, once. */
static void expect(const char *what, int want_64, const char *name, int64_t position, int64_t info,
                   int64_t want_info)
{
    int ok = seen_64 == (want_64 ? 1 : 0) && seen_32 == (want_64 ? 0 : 1) &&
             strcmp(seen_name, name) == 0 && seen_position == position && info == want_info;
    printf("%s %s: xerbla_64_ %d, xerbla_ %d call(s), '%s' position %lld (want '%s' %lld); info "
           "%lld (want %lld)\n",
           ok ? "PASS" : "FAIL", what, seen_64, seen_32, seen_name, (long long)seen_position, name,
           (long long)position, (long long)info, (long long)want_info);
    failures += !ok;
    seen_64 = seen_32 = 0;
    seen_name[0] = '\0';
    seen_position = 0;
}

int main(void)
{
    double a[16], b[16], c[16];
    float sa[16], sb[16];
    for (int i = 0; i < 16; i++)
        a[i] = b[i] = c[i] = sa[i] = sb[i] = (float)(i + 1);
    const double alpha = 1.0, beta = 0.0;
    const float salpha = 1.0f, sbeta = 0.0f;
    const int64_t huge = ((int64_t)1 << 32) + 4; /* 4 in its low half */
    int64_t m = 4, n = 4, k = 4, ld = 4, small = 3, neg = -1, one = 1, ipiv[4] = {0}, info = 7;

    dgemm_64_("N", "N", &m, &n, &k, &alpha, a, &small, b, &ld, &beta, c, &ld, 1, 1);
    expect("dgemm_64_ lda=3 < M=4", 1, "DGEMM", 8, 0, 0);
    dgemm_64_("N", "q", &m, &n, &k, &alpha, a, &ld, b, &ld, &beta, c, &ld, 1, 1);
    expect("dgemm_64_ transb='q'", 1, "DGEMM", 2, 0, 0);
    sgemm_64_("N", "N", &m, &n, &neg, &salpha, sa, &ld, sb, &ld, &sbeta, sa, &ld, 1, 1);
    expect("sgemm_64_ K<0", 1, "SGEMM", 5, 0, 0);
    dgemm_64_("N", "N", &m, &n, &k, &alpha, a, &ld, b, &ld, &beta, c, &huge, 1, 1);
    expect("dgemm_64_ ldc=2^32+4: beyond clops's 32 bits", 1, "DGEMM", 13, 0, 0);

    dgetrf_64_(&neg, &n, a, &ld, ipiv, &info);
    expect("dgetrf_64_ M=-1", 1, "DGETRF", 1, info, -1);
    info = 7;
    sgetrf_64_(&m, &n, sa, &small, ipiv, &info);
    expect("sgetrf_64_ lda=3 < M", 1, "SGETRF", 4, info, -4);
    info = 7;
    const int64_t rows = (int64_t)1 << 33;
    dgetrf_64_(&rows, &one, a, &rows, ipiv, &info);
    expect("dgetrf_64_ M=2^33: beyond clops's 32 bits", 1, "DGETRF", 1, info, -1);
    info = 7;
    dgetrs_64_("X", &n, &one, a, &ld, ipiv, b, &ld, &info, 1);
    expect("dgetrs_64_ trans='X'", 1, "DGETRS", 1, info, -1);
    info = 7;
    sgetrs_64_("T", &n, &one, sa, &ld, ipiv, sb, &small, &info, 1);
    expect("sgetrs_64_ ldb=3", 1, "SGETRS", 8, info, -8);
    info = 7;
    dgesv_64_(&n, &neg, a, &ld, ipiv, b, &ld, &info);
    expect("dgesv_64_ NRHS<0", 1, "DGESV", 2, info, -2);
    info = 7;
    sgesv_64_(&n, &one, sa, &ld, ipiv, sb, &small, &info);
    expect("sgesv_64_ ldb=3", 1, "SGESV", 7, info, -7);
    info = 7;
    dgesv_64_(&n, &one, a, &huge, ipiv, b, &ld, &info);
    expect("dgesv_64_ lda=2^32+4: beyond clops's 32 bits", 1, "DGESV", 4, info, -4);

    int m32 = 4, small32 = 3, ipiv32[4] = {0}, info32 = 7;
    dgesv_(&m32, &m32, a, &small32, ipiv32, b, &m32, &info32);
    expect("dgesv_ lda=3 still goes to xerbla_", 0, "DGESV", 4, info32, -4);

    int untouched = 1;
    for (int i = 0; i < 16; i++)
        untouched &= a[i] == i + 1 && b[i] == i + 1 && c[i] == i + 1 && sa[i] == i + 1 &&
                     sb[i] == i + 1 && (i >= 4 || (ipiv[i] == 0 && ipiv32[i] == 0));
    return finish(untouched, failures);
}
