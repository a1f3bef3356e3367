/* test_preload.c — a program built against the system BLAS and LAPACK (-llapack -lblas),
 * knowing nothing of clops. Run with LD_PRELOAD=libclops_lapack.so, its dgemm_ calls must run
 * in clops: the preloaded library's clops_lapack_calls() (found with dlsym, since the program
 * does not link it) counts them. Then the system LAPACK's own dpotrf (Cholesky, which
 * libclops_lapack does not replace) must still be right while its blocked updates, dgemm_ on
 * blocks of one array, run in clops. With --expect-host (and CLOPS_LAPACK_OFFLOAD_MIN above
 * every call's size) everything must instead stay on the system BLAS, reached through
 * RTLD_NEXT, and give the same results. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc, size_t transa_len, size_t transb_len);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);

/* max |L L^T - A| / (N max |A|) after dpotrf('L') of an N x N SPD matrix, lda = N + 5: large
 * enough (N = 200) for dpotrf's blocked code, whose trailing updates call dgemm_. */
static double cholesky_error(void)
{
    enum { N = 200, LDA = N + 5 };
    static double a[LDA * N], l[LDA * N];
    unsigned state = 12345;
    for (int j = 0; j < N; j++)
        for (int i = 0; i <= j; i++) {
            state = state * 1103515245u + 12345u;
            double v = (double)(state >> 8) / (1u << 24) - 0.5;
            a[i + j * LDA] = a[j + i * LDA] = v + (i == j ? N : 0);
        }
    memcpy(l, a, sizeof l);
    int n = N, lda = LDA, info = -1;
    dpotrf_("L", &n, l, &lda, &info, 1);
    if (info != 0)
        return INFINITY;
    double worst = 0;
    for (int j = 0; j < N; j++)
        for (int i = j; i < N; i++) {
            long double s = 0;
            for (int p = 0; p <= j; p++)
                s += (long double)l[i + p * LDA] * l[j + p * LDA];
            double e = (double)fabsl(s - a[i + j * LDA]) / (N * (N + 0.5));
            worst = isnan(e) || e > worst ? e : worst;
        }
    return worst;
}

int main(int argc, char **argv)
{
    const int expect_host = argc > 1 && strcmp(argv[1], "--expect-host") == 0;
    int failures = 0;
    /* C = A B with A = [1 2 3; 4 5 6] (2x3) and B = [1 0; 0 1; 1 1] (3x2), column-major. */
    const double a[6] = {1, 4, 2, 5, 3, 6}, b[6] = {1, 0, 1, 0, 1, 1};
    double c[4] = {-1, -1, -1, -1};
    const double one = 1.0, zero = 0.0, two = 2.0;
    int m = 2, n = 2, k = 3;
    dgemm_("N", "N", &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m, 1, 1);
    const double want[4] = {4, 10, 5, 11};
    double e = 0;
    for (int i = 0; i < 4; i++)
        e += fabs(c[i] - want[i]);
    printf("%s C = A B = [%g %g; %g %g], |C - [4 5; 10 11]| = %g\n", e == 0 ? "PASS" : "FAIL", c[0],
           c[2], c[1], c[3], e);
    failures += e != 0;
    /* C = 2 op(A) B + C with transa = 'T' on A^T stored 3 x 2: C becomes 3 A B. */
    const double at[6] = {1, 2, 3, 4, 5, 6}; /* A^T column-major (3x2): A = [1 2 3; 4 5 6] */
    dgemm_("T", "N", &m, &n, &k, &two, at, &k, b, &k, &one, c, &m, 1, 1);
    e = 0;
    for (int i = 0; i < 4; i++)
        e += fabs(c[i] - 3 * want[i]);
    printf("%s C = 2 (A^T)^T B + C, |C - 3 [4 5; 10 11]| = %g\n", e == 0 ? "PASS" : "FAIL", e);
    failures += e != 0;

    int (*calls)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "clops_lapack_calls");
    if (calls == NULL) {
        printf("FAIL libclops_lapack is not loaded (no clops_lapack_calls): run with "
               "LD_PRELOAD=libclops_lapack.so\n");
        return 1;
    }
    int ran = calls(), want_ran = expect_host ? 0 : 2;
    printf("%s %d dgemm_ calls ran in clops (want %d)\n", ran == want_ran ? "PASS" : "FAIL", ran,
           want_ran);
    failures += ran != want_ran;

    e = cholesky_error();
    int in_clops = calls() - ran;
    int ok = e < 1e-15 && (expect_host ? in_clops == 0 : in_clops > 0);
    printf("%s system dpotrf 200x200: max |L L^T - A| / (N |A|) = %.3g < 1e-15, its dgemm_ calls "
           "in clops: %d (want %s)\n",
           ok ? "PASS" : "FAIL", e, in_clops, expect_host ? "0" : "> 0");
    failures += !ok;
    return failures == 0 ? 0 : 1;
}
