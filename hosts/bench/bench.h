/* bench.h — the areas of clops-bench: `clops-bench [AREA] [options]`, one file per area
 * (bench_<area>.c, or bench.c for gemm), each with its own options and --help. */
#ifndef CLOPS_BENCH_H
#define CLOPS_BENCH_H

/* Each area's entry: argv[0] is the area's name; returns the process exit status
 * (0 ok, 1 a call failed or a result was wrong, 2 usage, 3 library load, 4 configuration). */
int bench_gemm_main(int argc, char **argv);
int bench_memory_main(int argc, char **argv);
int bench_tune_main(int argc, char **argv);
int bench_lu_main(int argc, char **argv);
int bench_mandelbrot_main(int argc, char **argv);
int bench_overlap_main(int argc, char **argv);

#endif
