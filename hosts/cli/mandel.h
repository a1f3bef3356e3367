/* mandel.h — the host's Mandelbrot reference as the CLI's checks use it (mandelbrot_ref.c, built
 * without FP contraction over hosts/common/mandelbrot_ref.h). */
#ifndef CLOPS_CLI_MANDEL_H
#define CLOPS_CLI_MANDEL_H

#include <stdint.h>

struct mandel_view {
    double center_x, center_y, scale;
    uint32_t max_iterations;
    int f64; /* precision: 0 f32, 1 f64 */
};
/* The iteration count of pixel (i, j) of an h x w image, exactly as the operator computes it. */
uint32_t mandel_count(int64_t i, int64_t j, int64_t h, int64_t w, const struct mandel_view *v);
/* The operator's palette colour of count n. */
void mandel_colour(uint32_t n, uint32_t max_iterations, uint8_t rgba[4]);

#endif
