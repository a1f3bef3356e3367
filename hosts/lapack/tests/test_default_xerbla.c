/* test_default_xerbla.c — with no xerbla_ of its own, a program gets libclops_lapack's, which
 * prints LAPACK's message and returns; the routine then returns with INFO = -position. The
 * messages are matched by the test (expect.cmake). */
#include <stdio.h>

#include "lapack.h"

int main(void)
{
    double a[4] = {1, 2, 3, 4}, b[2] = {5, 6}, c[4] = {0};
    const double alpha = 1.0, beta = 0.0;
    int two = 2, one = 1, ipiv[2], info = 0;
    dgemm_("N", "N", &two, &two, &two, &alpha, a, &one, b, &two, &beta, c, &two, 1, 1);
    dgesv_(&two, &one, a, &two, ipiv, b, &one, &info);
    int ok = info == -7 && c[0] == 0 && c[3] == 0 && b[0] == 5 && b[1] == 6;
    printf("%s dgesv ldb=1 returned info %d (want -7); nothing written\n", ok ? "PASS" : "FAIL",
           info);
    return ok ? 0 : 1;
}
