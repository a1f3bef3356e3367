/* mandelbrot_ref.c — the host's scalar Mandelbrot reference, written out from the operator's
 * documented steps (clops ops mandelbrot). It must round every operation as the kernel does:
 * CMakeLists.txt builds this file with -ffp-contract=off (no a*b+c fused into an fma, which
 * rounds once where the kernel rounds twice), and float arithmetic must not carry excess
 * precision. */
#include <float.h>

#include "pipeline.h"

#if FLT_EVAL_METHOD != 0
#error "the f32 reference needs float arithmetic without excess precision (FLT_EVAL_METHOD 0)"
#endif

static uint32_t count_f32(int64_t i, int64_t j, int64_t h, int64_t w, const struct mandel_view *v)
{
    const float center_x = (float)v->center_x, center_y = (float)v->center_y;
    const float px = (float)(v->scale / (double)w);
    const float half_w = (float)(0.5 * (double)w), half_h = (float)(0.5 * (double)h);
    const float cx = center_x + (((float)j + 0.5f) - half_w) * px;
    const float cy = center_y - (((float)i + 0.5f) - half_h) * px;
    float x = 0, y = 0;
    uint32_t n = 0;
    while (n < v->max_iterations) {
        const float x2 = x * x, y2 = y * y;
        if (x2 + y2 > 4.0f)
            break;
        const float t = x * y;
        y = (t + t) + cy;
        x = (x2 - y2) + cx;
        n++;
    }
    return n;
}

static uint32_t count_f64(int64_t i, int64_t j, int64_t h, int64_t w, const struct mandel_view *v)
{
    const double px = v->scale / (double)w, half_w = 0.5 * (double)w, half_h = 0.5 * (double)h;
    const double cx = v->center_x + (((double)j + 0.5) - half_w) * px;
    const double cy = v->center_y - (((double)i + 0.5) - half_h) * px;
    double x = 0, y = 0;
    uint32_t n = 0;
    while (n < v->max_iterations) {
        const double x2 = x * x, y2 = y * y;
        if (x2 + y2 > 4.0)
            break;
        const double t = x * y;
        y = (t + t) + cy;
        x = (x2 - y2) + cx;
        n++;
    }
    return n;
}

uint32_t mandel_count(int64_t i, int64_t j, int64_t h, int64_t w, const struct mandel_view *v)
{
    return v->f64 ? count_f64(i, j, h, w, v) : count_f32(i, j, h, w, v);
}

/* Black inside; outside, a cycle of 256 iterations through four colours, interpolated in
 * integers. */
void mandel_colour(uint32_t n, uint32_t max_iterations, uint8_t rgba[4])
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
