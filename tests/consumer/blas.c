/* dgemm_ and dgesv_ from libclops_lapack, linked as a program links its BLAS/LAPACK. */
#include <stdio.h>

void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc);
void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
            const int *ldb, int *info);

int main(void)
{
    /* Column-major: A is 2x3 [1 2 3; 4 5 6], B is 3x2 [1 0; 0 1; 1 1]. */
    double a[6] = {1, 4, 2, 5, 3, 6}, b[6] = {1, 0, 1, 0, 1, 1}, c[4] = {0, 0, 0, 0};
    const int m = 2, n = 2, k = 3;
    const double one = 1.0, zero = 0.0;
    dgemm_("N", "N", &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m);
    /* Solve [2 1; 1 3] x = [3; 5]: x = [0.8; 1.4]. */
    double s[4] = {2, 1, 1, 3}, x[2] = {3, 5};
    int ipiv[2], info = -1, nrhs = 1;
    dgesv_(&n, &nrhs, s, &n, ipiv, x, &n, &info);
    printf("C = [%g %g; %g %g] x = [%g %g] info = %d\n", c[0], c[2], c[1], c[3], x[0], x[1], info);
    return 0;
}
