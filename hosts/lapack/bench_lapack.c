/* bench_lapack.c — clops-lapack-bench: times the drop-in's ?gemm_ and ?gesv_ on host arrays, as
 * a plain C or Fortran client (or one running under LD_PRELOAD=libclops_lapack.so) calls them,
 * so that the time includes every transfer between the caller's pageable memory and the device.
 * Each size is called once to warm up (pool, kernel builds), checked on the host in long double,
 * then timed: the median of --reps calls. It prints one table row per routine and size and
 * exits 1 when a check failed. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/lapack.h"
#include "util.h"

enum { MAX_SIZES = 16, MAX_REPS = 101, CHECKED_ROWS = 3 };

struct options {
    int sizes[MAX_SIZES];
    int nsizes;
    int reps;
    int single; /* also sgemm_/sgesv_ */
};

/* Uniform in [-1, 1) from a 64-bit LCG seeded by the clock: fresh inputs every run. */
static unsigned long long rng_state;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

/* The operands of one size, column-major with leading dimension n, as double and as float. */
struct operands {
    int n, f32;
    void *a, *b, *c, *work_a, *work_b;
    int *ipiv;
};

static size_t elem(const struct operands *o)
{
    return o->f32 ? sizeof(float) : sizeof(double);
}

static double get(const struct operands *o, const void *p, size_t i)
{
    return o->f32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static int operands_new(struct operands *o, int n, int f32)
{
    *o = (struct operands){.n = n, .f32 = f32};
    size_t nn = (size_t)n * (size_t)n, es = elem(o);
    o->a = malloc(nn * es);
    o->b = malloc(nn * es);
    o->c = malloc(nn * es);
    o->work_a = malloc(nn * es);
    o->work_b = malloc((size_t)n * es);
    o->ipiv = malloc((size_t)n * sizeof *o->ipiv);
    if (!o->a || !o->b || !o->c || !o->work_a || !o->work_b || !o->ipiv)
        return -1;
    for (size_t i = 0; i < nn; i++) {
        double x = uniform(), y = uniform();
        if (f32) {
            ((float *)o->a)[i] = (float)x;
            ((float *)o->b)[i] = (float)y;
        } else {
            ((double *)o->a)[i] = x;
            ((double *)o->b)[i] = y;
        }
    }
    return 0;
}

static void operands_free(struct operands *o)
{
    free(o->a);
    free(o->b);
    free(o->c);
    free(o->work_a);
    free(o->work_b);
    free(o->ipiv);
}

static void call_gemm(struct operands *o)
{
    const int n = o->n;
    if (o->f32) {
        const float one = 1, zero = 0;
        sgemm_("N", "N", &n, &n, &n, &one, o->a, &n, o->b, &n, &zero, o->c, &n, 1, 1);
    } else {
        const double one = 1, zero = 0;
        dgemm_("N", "N", &n, &n, &n, &one, o->a, &n, o->b, &n, &zero, o->c, &n, 1, 1);
    }
}

/* A fresh copy of A, and of B's first column as the right-hand side: gesv overwrites both. */
static void gesv_inputs(struct operands *o)
{
    memcpy(o->work_a, o->a, (size_t)o->n * (size_t)o->n * elem(o));
    memcpy(o->work_b, o->b, (size_t)o->n * elem(o));
}

static int call_gesv(struct operands *o)
{
    const int n = o->n, nrhs = 1;
    int info = -1;
    if (o->f32)
        sgesv_(&n, &nrhs, o->work_a, &n, o->ipiv, o->work_b, &n, &info);
    else
        dgesv_(&n, &nrhs, o->work_a, &n, o->ipiv, o->work_b, &n, &info);
    return info;
}

/* Rows 0, n/2 and n-1 of C against long double: the largest error in units of the working
 * precision's epsilon times sum_k |a_ik| |b_kj| (the componentwise bound). */
static double gemm_error(const struct operands *o)
{
    const size_t n = (size_t)o->n;
    const size_t rows[CHECKED_ROWS] = {0, n / 2, n - 1};
    double worst = 0, eps = o->f32 ? FLT_EPSILON : DBL_EPSILON;
    for (int r = 0; r < CHECKED_ROWS; r++)
        for (size_t j = 0; j < n; j++) {
            long double s = 0, mag = 0;
            for (size_t k = 0; k < n; k++) {
                long double p = (long double)get(o, o->a, rows[r] + k * n) *
                                (long double)get(o, o->b, k + j * n);
                s += p;
                mag += fabsl(p);
            }
            double e = (double)(fabsl(s - (long double)get(o, o->c, rows[r] + j * n)) /
                                (mag * (long double)eps));
            if (!(e <= worst)) /* NaN is the worst */
                worst = isnan(e) ? INFINITY : e;
        }
    return worst;
}

/* LAPACK's scaled residual of a solve: ||b - A x||_inf / (||A||_inf ||x||_inf n eps). */
static double gesv_residual(const struct operands *o)
{
    const size_t n = (size_t)o->n;
    long double r = 0, anorm = 0, xnorm = 0;
    for (size_t i = 0; i < n; i++) {
        long double s = get(o, o->b, i), row = 0;
        for (size_t k = 0; k < n; k++) {
            long double aik = get(o, o->a, i + k * n);
            s -= aik * (long double)get(o, o->work_b, k);
            row += fabsl(aik);
        }
        r = fmaxl(r, fabsl(s));
        anorm = fmaxl(anorm, row);
        xnorm = fmaxl(xnorm, fabsl((long double)get(o, o->work_b, i)));
    }
    double eps = o->f32 ? FLT_EPSILON : DBL_EPSILON;
    double res = (double)(r / (anorm * xnorm * (long double)n * (long double)eps));
    return isnan(res) ? INFINITY : res;
}

/* Times `reps` calls of gemm (gesv = 0) or gesv (1); the inputs of gesv are refreshed outside
 * the timed region. Returns the median in ms, or -1 when gesv reported info != 0. */
static double time_calls(struct operands *o, int gesv, int reps)
{
    double t[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        if (gesv)
            gesv_inputs(o);
        double start = host_now_ms();
        if (gesv) {
            if (call_gesv(o) != 0)
                return -1;
        } else {
            call_gemm(o);
        }
        t[r] = host_now_ms() - start;
    }
    return host_median(t, reps);
}

static void print_row(const char *routine, int n, double ms, double flops, const char *check,
                      double value, int ok)
{
    printf("%-7s %6d %10.2f %10.1f   %s %-9.3g %s\n", routine, n, ms, flops / (ms * 1e6), check,
           value, ok ? "ok" : "FAILED");
}

/* One size and precision: gemm, then gesv. Returns the number of failed checks. */
static int bench_size(int n, int f32, int reps)
{
    struct operands o;
    if (operands_new(&o, n, f32) != 0) {
        operands_free(&o);
        fprintf(stderr, "clops-lapack-bench: out of host memory at N = %d\n", n);
        return 1;
    }
    int failed = 0;
    const double nd = n;

    call_gemm(&o); /* warm-up, then checked */
    double err = gemm_error(&o);
    int ok = err < nd; /* far above rounding's sqrt(n)-ish growth, far below a wrong result */
    double ms = ok ? time_calls(&o, 0, reps) : 0;
    print_row(f32 ? "sgemm_" : "dgemm_", n, ms, 2 * nd * nd * nd, "err/eps|a||b|", err, ok);
    failed += !ok;

    gesv_inputs(&o);
    int info = call_gesv(&o);
    double res = info == 0 ? gesv_residual(&o) : INFINITY;
    ok = res < 30;
    ms = ok ? time_calls(&o, 1, reps) : 0;
    ok = ok && ms >= 0;
    print_row(f32 ? "sgesv_" : "dgesv_", n, ms, 2.0 / 3 * nd * nd * nd + 2 * nd * nd, "residual",
              res, ok);
    failed += !ok;

    operands_free(&o);
    return failed;
}

static int parse(int argc, char **argv, struct options *opt)
{
    *opt = (struct options){.sizes = {1024, 4096}, .nsizes = 2, .reps = 5};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            opt->nsizes = 0;
            for (char *s = strtok(argv[++i], ","); s; s = strtok(NULL, ",")) {
                long v = strtol(s, NULL, 10);
                if (v < 1 || v > 65536 || opt->nsizes == MAX_SIZES)
                    return -1;
                opt->sizes[opt->nsizes++] = (int)v;
            }
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            opt->reps = atoi(argv[++i]);
            if (opt->reps < 1 || opt->reps > MAX_REPS)
                return -1;
        } else if (!strcmp(argv[i], "--single")) {
            opt->single = 1;
        } else {
            return -1;
        }
    }
    return opt->nsizes > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct options opt;
    if (parse(argc, argv, &opt) != 0) {
        fprintf(stderr,
                "Usage: clops-lapack-bench [--sizes N,N,...] [--reps R (1..%d)] "
                "[--single]\n"
                "Times dgemm_ (N x N x N, beta = 0) and dgesv_ (1 RHS) on host arrays\n"
                "through the BLAS/LAPACK the program is linked with (libclops_lapack),\n"
                "with --single sgemm_ and sgesv_ too; the median of R calls.\n",
                MAX_REPS);
        return 2;
    }
    rng_state = (unsigned long long)time(NULL) * 2654435761ull + 1;
    printf("%-7s %6s %10s %10s   %s\n", "routine", "N", "median ms", "GFLOP/s", "check");
    int failed = 0;
    for (int p = 0; p < 1 + opt.single; p++)
        for (int i = 0; i < opt.nsizes; i++)
            failed += bench_size(opt.sizes[i], p == 1, opt.reps);
    return failed ? 1 : 0;
}
