/* mandelbrot_ref.c — the pipeline host's Mandelbrot reference: hosts/common/mandelbrot_ref.h
 * (the operator's documented steps), behind mandel.h's names. CMakeLists.txt builds this file
 * with -ffp-contract=off, as that header requires. */
#include "mandelbrot_ref.h"

#include "mandel.h"

uint32_t mandel_count(int64_t i, int64_t j, int64_t h, int64_t w, const struct mandel_view *v)
{
    const struct mandel_ref_view r = {v->center_x, v->center_y, v->scale, v->max_iterations,
                                      v->f64};
    return mandel_ref_count(&r, i, j, h, w);
}

void mandel_colour(uint32_t n, uint32_t max_iterations, uint8_t rgba[4])
{
    mandel_ref_colour(n, max_iterations, rgba);
}
