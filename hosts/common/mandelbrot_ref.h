/* mandelbrot_ref.h — the mandelbrot operator's documented steps (clops ops mandelbrot) on the
 * host: the scalar reference that the tests, the bench and `clops run` compare the devices'
 * counts with, to the bit. It must round every operation as the kernel does: its fmas are
 * explicit calls (correctly rounded, as OpenCL's are), nothing else may be fused, so
 * include it only from files built without contraction (-ffp-contract=off; GCC's -std=c11 also
 * turns it off), and float arithmetic must not carry excess precision. */
#ifndef CLOPS_HOSTS_MANDELBROT_REF_H
#define CLOPS_HOSTS_MANDELBROT_REF_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if FLT_EVAL_METHOD != 0
#error "the f32 reference needs float arithmetic without excess precision (FLT_EVAL_METHOD 0)"
#endif

/* Correctly rounded fused multiply-adds without an FMA instruction or a trusted libm, by
 * rounding to odd (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved
 * algorithms using rounding to odd", IEEE TC 2008). MinGW-w64's fma and fmaf are not correctly
 * rounded (seen under Wine: counts one apart from PoCL's near the set's edge), so the reference
 * uses these there; glibc's are, and test_mandelbrot checks these against them. Exact for the
 * magnitudes a Mandelbrot step sees (no overflow or underflow in the splits). */
static inline double mandel_ref_odd(double s, double error)
{
    /* s + error is exact; the neighbour of s toward error is the other bracketing double, and
     * one of the two has an odd last bit: rounding to odd picks it. */
    uint64_t bits;
    memcpy(&bits, &s, sizeof bits);
    if (error != 0 && (bits & 1) == 0)
        s = nextafter(s, error > 0 ? INFINITY : -INFINITY);
    return s;
}

static inline double mandel_ref_sum_odd(double a, double b)
{
    const double s = a + b, bb = s - a;
    return mandel_ref_odd(s, (a - (s - bb)) + (b - bb));
}

static inline float mandel_ref_fmaf_emulated(float a, float b, float c)
{
    /* The product is exact in double (48 bits); their sum rounded to odd in double (53 >= 24 + 2
     * bits) then rounds to float as the exact value would. */
    return (float)mandel_ref_sum_odd((double)a * (double)b, (double)c);
}

static inline double mandel_ref_fma_emulated(double a, double b, double c)
{
    /* a * b = uh + ul exactly (Veltkamp's split, Dekker's product); c + uh = th + tl exactly;
     * then RN(th + RO(tl + ul)). */
    const double split = 134217729.0; /* 2^27 + 1 */
    const double ga = a * split, gb = b * split;
    const double ah = ga - (ga - a), al = a - ah, bh = gb - (gb - b), bl = b - bh;
    const double uh = a * b, ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl;
    const double th = c + uh, bb = th - c, tl = (c - (th - bb)) + (uh - bb);
    return th + mandel_ref_sum_odd(tl, ul);
}

#if defined(__MINGW32__)
#define MANDEL_REF_FMAF mandel_ref_fmaf_emulated
#define MANDEL_REF_FMA mandel_ref_fma_emulated
#else
#define MANDEL_REF_FMAF fmaf
#define MANDEL_REF_FMA fma
#endif

/* A view as the operator takes it. */
struct mandel_ref_view {
    double center_x, center_y, scale;
    uint32_t max_iterations;
    int f64; /* 0: the steps in float, 1: in double */
};

/* The steps in one precision, T (float or double) with its fma (fmaf or fma): the view's values
 * are rounded to T once, as the kernel receives them, and every step after is in T. */
#define MANDEL_REF_COUNT_IN(name, T, FMA)                                                          \
    static inline uint32_t name(const struct mandel_ref_view *v, int64_t i, int64_t j, int64_t h,  \
                                int64_t w)                                                         \
    {                                                                                              \
        const T center_x = (T)v->center_x, center_y = (T)v->center_y;                              \
        const T px = (T)(v->scale / (double)w);                                                    \
        const T half_w = (T)(0.5 * (double)w), half_h = (T)(0.5 * (double)h);                      \
        const T cx = center_x + (((T)j + (T)0.5) - half_w) * px;                                   \
        const T cy = center_y - (((T)i + (T)0.5) - half_h) * px;                                   \
        T x = 0, y = 0;                                                                            \
        uint32_t n = 0;                                                                            \
        while (n < v->max_iterations) {                                                            \
            const T y2 = y * y;                                                                    \
            if (FMA(x, x, y2) > (T)4)                                                              \
                break;                                                                             \
            const T y_next = FMA(x + x, y, cy);                                                    \
            x = FMA(x, x, cx - y2);                                                                \
            y = y_next;                                                                            \
            n++;                                                                                   \
        }                                                                                          \
        return n;                                                                                  \
    }
MANDEL_REF_COUNT_IN(mandel_ref_count_f32, float, MANDEL_REF_FMAF)
MANDEL_REF_COUNT_IN(mandel_ref_count_f64, double, MANDEL_REF_FMA)
#undef MANDEL_REF_COUNT_IN

/* The count of pixel (i, j) (row i from the top) of an h x w rendering of the view. */
static inline uint32_t mandel_ref_count(const struct mandel_ref_view *v, int64_t i, int64_t j,
                                        int64_t h, int64_t w)
{
    return v->f64 ? mandel_ref_count_f64(v, i, j, h, w) : mandel_ref_count_f32(v, i, j, h, w);
}

/* The operator's palette: black inside; outside, a cycle of 256 iterations through four
 * colours, interpolated in integers. */
static inline void mandel_ref_colour(uint32_t n, uint32_t max_iterations, uint8_t rgba[4])
{
    static const uint8_t c[4][3] = {{0, 7, 100}, {32, 107, 203}, {237, 255, 255}, {255, 170, 0}};
    rgba[3] = 255;
    if (n >= max_iterations) {
        rgba[0] = rgba[1] = rgba[2] = 0;
        return;
    }
    const uint32_t p = (n * 4u) & 1023u, s = p >> 8, next = (s + 1u) & 3u, w = p & 255u;
    for (int ch = 0; ch < 3; ch++)
        rgba[ch] = (uint8_t)((c[s][ch] * (256u - w) + c[next][ch] * w) >> 8);
}

#endif
