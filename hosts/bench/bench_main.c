/* bench_main.c — clops-bench's dispatcher: the first argument names the area to measure
 * (gemm when it names none, so that `clops-bench --sizes ...` times GEMM). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"

struct bench_area {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
};

static const struct bench_area areas[] = {
    {"gemm", "GEMM f32/f64 against CLBlast, and cold vs warm first call", bench_gemm_main},
    {"memory", "reduce (2^26 f32; 2^22 on a CPU) and transpose (8192^2; 2048^2) in GB/s",
     bench_memory_main},
    {"tune", "searches GEMM tile sets and prints the tuning-table entry", bench_tune_main},
    {"lu", "LU f32/f64, solve with 1 and 64 RHS", bench_lu_main},
    {"mandelbrot", "Mandelbrot iterations/s: GPU f32, and a deep f64 zoom split GPU + CPU",
     bench_mandelbrot_main},
    {"overlap", "GEMMs on host operands on two streams vs one after the other; submit's time",
     bench_overlap_main},
};

enum { AREA_COUNT = (int)(sizeof areas / sizeof areas[0]) };

static void usage(void)
{
    printf("Usage: clops-bench [AREA] [options]   (AREA defaults to gemm)\n\nAreas:\n");
    for (int i = 0; i < AREA_COUNT; i++)
        printf("  %-12s %s\n", areas[i].name, areas[i].summary);
    printf("\n`clops-bench AREA --help` lists an area's options.\n");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--areas") == 0 || strcmp(argv[1], "help") == 0)) {
        usage();
        return 0;
    }
    /* The area's results file (--csv, --chart) is closed and charted once it has returned. */
    for (int i = 0; argc >= 2 && i < AREA_COUNT; i++)
        if (strcmp(argv[1], areas[i].name) == 0)
            return bench_results_finish(areas[i].main(argc - 1, argv + 1));
    return bench_results_finish(bench_gemm_main(argc, argv));
}
