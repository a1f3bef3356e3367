/* level1.c — the BLAS level-1 routines libclops_lapack.so runs on the host, in both integer
 * widths: isamax, sdot, cdotc and zdotc, with the reference BLAS's semantics. They are
 * what libblastrampoline calls to recognise a library before forwarding to it: the integer
 * width (isamax), the complex return convention (cdotc, zdotc) and f2c's (sdot). */
#include <complex.h>
#include <math.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

/* The reference BLAS walks a vector of negative increment from its far end. */
static int64_t first_element(int64_t n, int64_t inc)
{
    return inc < 0 ? (1 - n) * inc : 0;
}

/* The first index (1-based) of the largest |x(i)|; 0 when n < 1 or incx <= 0. */
static int64_t isamax(int64_t n, const float *x, int64_t incx)
{
    if (n < 1 || incx <= 0)
        return 0;
    int64_t best = 1;
    float largest = fabsf(x[0]);
    for (int64_t i = 1; i < n; i++)
        if (fabsf(x[i * incx]) > largest) {
            best = i + 1;
            largest = fabsf(x[i * incx]);
        }
    return best;
}

static float sdot(int64_t n, const float *x, int64_t incx, const float *y, int64_t incy)
{
    float sum = 0.0f;
    for (int64_t i = 0, ix = first_element(n, incx), iy = first_element(n, incy); i < n;
         i++, ix += incx, iy += incy)
        sum += x[ix] * y[iy];
    return sum;
}

static float complex cdotc(int64_t n, const float complex *x, int64_t incx, const float complex *y,
                           int64_t incy)
{
    float complex sum = 0.0f;
    for (int64_t i = 0, ix = first_element(n, incx), iy = first_element(n, incy); i < n;
         i++, ix += incx, iy += incy)
        sum += conjf(x[ix]) * y[iy];
    return sum;
}

static double complex zdotc(int64_t n, const double complex *x, int64_t incx,
                            const double complex *y, int64_t incy)
{
    double complex sum = 0.0;
    for (int64_t i = 0, ix = first_element(n, incx), iy = first_element(n, incy); i < n;
         i++, ix += incx, iy += incy)
        sum += conj(x[ix]) * y[iy];
    return sum;
}

/* gfortran returns COMPLEX and REAL function results as C does, in registers (no hidden result
 * argument, no f2c double for REAL), which is what libblastrampoline's probes then detect. */

EXPORT int isamax_(const int *n, const float *x, const int *incx)
{
    return (int)isamax(*n, x, *incx);
}

EXPORT int64_t isamax_64_(const int64_t *n, const float *x, const int64_t *incx)
{
    return isamax(*n, x, *incx);
}

EXPORT float sdot_(const int *n, const float *x, const int *incx, const float *y, const int *incy)
{
    return sdot(*n, x, *incx, y, *incy);
}

EXPORT float sdot_64_(const int64_t *n, const float *x, const int64_t *incx, const float *y,
                      const int64_t *incy)
{
    return sdot(*n, x, *incx, y, *incy);
}

EXPORT float complex cdotc_(const int *n, const float complex *x, const int *incx,
                            const float complex *y, const int *incy)
{
    return cdotc(*n, x, *incx, y, *incy);
}

EXPORT float complex cdotc_64_(const int64_t *n, const float complex *x, const int64_t *incx,
                               const float complex *y, const int64_t *incy)
{
    return cdotc(*n, x, *incx, y, *incy);
}

EXPORT double complex zdotc_(const int *n, const double complex *x, const int *incx,
                             const double complex *y, const int *incy)
{
    return zdotc(*n, x, *incx, y, *incy);
}

EXPORT double complex zdotc_64_(const int64_t *n, const double complex *x, const int64_t *incx,
                                const double complex *y, const int64_t *incy)
{
    return zdotc(*n, x, *incx, y, *incy);
}
