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

/* Each routine is exported with LP64 and ILP64 INTEGERs (int, int64_t; suffix 64_): one macro
 * per shape spells the prototype once. */
#define IAMAX_ENTRY(name, routine, T, I)                                                           \
    EXPORT I name(const I *n, const T *x, const I *incx)                                           \
    {                                                                                              \
        return (I)routine(*n, x, *incx);                                                           \
    }
IAMAX_ENTRY(isamax_, isamax, float, int)
IAMAX_ENTRY(isamax_64_, isamax, float, int64_t)

#define DOT_ENTRY(name, routine, T, I)                                                             \
    EXPORT T name(const I *n, const T *x, const I *incx, const T *y, const I *incy)                \
    {                                                                                              \
        return routine(*n, x, *incx, y, *incy);                                                    \
    }
DOT_ENTRY(sdot_, sdot, float, int)
DOT_ENTRY(sdot_64_, sdot, float, int64_t)
DOT_ENTRY(cdotc_, cdotc, float complex, int)
DOT_ENTRY(cdotc_64_, cdotc, float complex, int64_t)
DOT_ENTRY(zdotc_, zdotc, double complex, int)
DOT_ENTRY(zdotc_64_, zdotc, double complex, int64_t)
