/* pdgesv_clops.c — ScaLAPACK's pdgesv on a random N×N system distributed block-cyclically over
 * a P×Q BLACS grid, with the scaled residual, the time, and where each rank's BLAS/LAPACK calls
 * went: built linked to libclops_lapack ahead of ScaLAPACK (pdgesv-clops) and without it
 * (pdgesv-system, which LD_PRELOAD=libclops_lapack.so.1 turns into the first). */
#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* BLACS's C interface and the ScaLAPACK/PBLAS routines used, as libscalapack exports them:
 * Fortran conventions (arguments by pointer, CHARACTER lengths appended), no header installed. */
void Cblacs_pinfo(int *me, int *processes);
void Cblacs_get(int context, int what, int *value);
void Cblacs_gridinit(int *context, const char *order, int rows, int cols);
void Cblacs_gridinfo(int context, int *rows, int *cols, int *row, int *col);
void Cblacs_gridexit(int context);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *context, const int *lld, int *info);
void pdgesv_(const int *n, const int *nrhs, double *a, const int *ia, const int *ja,
             const int *desca, int *ipiv, double *b, const int *ib, const int *jb, const int *descb,
             int *info);
void pdgemv_(const char *trans, const int *m, const int *n, const double *alpha, const double *a,
             const int *ia, const int *ja, const int *desca, const double *x, const int *ix,
             const int *jx, const int *descx, const int *incx, const double *beta, double *y,
             const int *iy, const int *jy, const int *descy, const int *incy, size_t trans_len);
double pdlange_(const char *norm, const int *m, const int *n, const double *a, const int *ia,
                const int *ja, const int *desca, double *work, size_t norm_len);

static const char usage[] =
    "usage: mpirun -np RANKS pdgesv-clops [-n N] [--nb NB] [--grid PxQ] [--seed S]\n"
    "Solves A x = b, A N×N and b uniform in [-1/2, 1/2) from a hash of (S, row, column), with\n"
    "ScaLAPACK's pdgesv on a P×Q grid (P Q = RANKS; default: the squarest with P <= Q) in\n"
    "NB×NB blocks, and prints the scaled residual ||A x - b||_inf / (||A||_inf ||x||_inf N eps),\n"
    "the time, and which library serves the BLAS/LAPACK routines ScaLAPACK calls.\n"
    "Defaults: N = 1000, NB = 64, S = 1. Exit status: 0 the residual is below 30 (LAPACK's\n"
    "test threshold), 1 it is not or pdgesv failed, 2 usage error.\n";

enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };

/* LAPACK's test threshold for scaled residuals (dchkge's THRESH in the reference tests). */
static const double residual_threshold = 30.0;

/* The BLAS routines ScaLAPACK 2.2's pdgesv calls on each rank, and dgemv_ for the residual's
 * pdgemv: found by counting, on 1×2 and 2×1 grids, the calls of every BLAS and LAPACK routine
 * ScaLAPACK imports (hosts/mpi/README.md). Of these, libclops_lapack has dgemm_. */
static const char *const routines[] = {"dgemm_",  "dtrsm_", "dger_",  "dscal_", "dswap_",
                                       "idamax_", "dcopy_", "daxpy_", "dgemv_", NULL};

/* ScaLAPACK's dgemm_ calls pass through this definition, counted, on their way to the next one
 * in the lookup order: libclops_lapack's where it is linked or preloaded, else the system
 * BLAS's. The program's own symbols come first in the global scope, before LD_PRELOAD's, so
 * every call of every library reaches it; the count tells how many of them clops ran. */
typedef void dgemm_fn(const char *transa, const char *transb, const int *m, const int *n,
                      const int *k, const double *alpha, const double *a, const int *lda,
                      const double *b, const int *ldb, const double *beta, double *c,
                      const int *ldc, size_t transa_len, size_t transb_len);
dgemm_fn dgemm_;
static dgemm_fn *next_dgemm;
static long long dgemm_calls;

void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc, size_t transa_len, size_t transb_len)
{
    dgemm_calls++; /* ScaLAPACK calls BLAS from the rank's one thread */
    next_dgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, transa_len,
               transb_len);
}

struct options {
    int n, nb, p, q;
    uint64_t seed;
};

struct grid {
    int context, p, q, row, col;
};

/* A distributed N×M matrix: its descriptor and this rank's mp×nq part, column-major. */
struct dmatrix {
    int desc[9];
    int mp, nq;
    double *local;
};

static int parse_int(const char *text, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < 1 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* Sets the option `name` from `value`; -1 when either is wrong. */
static int parse_option(const char *name, const char *value, struct options *o)
{
    char *end = NULL;
    if (strcmp(name, "-n") == 0)
        return parse_int(value, &o->n);
    if (strcmp(name, "--nb") == 0)
        return parse_int(value, &o->nb);
    if (strcmp(name, "--grid") == 0) {
        char extra;
        return sscanf(value, "%dx%d%c", &o->p, &o->q, &extra) == 2 && o->p >= 1 && o->q >= 1 ? 0
                                                                                             : -1;
    }
    if (strcmp(name, "--seed") == 0) {
        errno = 0;
        o->seed = strtoull(value, &end, 0);
        return end != value && *end == '\0' && errno == 0 ? 0 : -1;
    }
    return -1;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.n = 1000, .nb = 64, .seed = 1};
    for (int a = 1; a < argc; a += 2)
        if (a + 1 >= argc || parse_option(argv[a], argv[a + 1], o) != 0)
            return -1;
    return 0;
}

/* The squarest P×Q = ranks with P <= Q (ScaLAPACK's users' guide advises P <= Q for LU: the
 * pivot search runs down a process column). */
static void default_grid(int ranks, int *p, int *q)
{
    *p = 1;
    for (int d = 1; d * d <= ranks; d++)
        if (ranks % d == 0)
            *p = d;
    *q = ranks / *p;
}

/* splitmix64's finaliser: element (i, j) depends on (seed, i, j) alone, so each rank fills its
 * blocks without communication and the system is the same for every grid. */
static double uniform(uint64_t seed, uint64_t index)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15u + index;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53 - 0.5;
}

/* The global index of local row (or column) `l` of the process at `coord` of `procs`, blocks of
 * `nb` dealt round-robin from process 0 (descinit's RSRC = CSRC = 0). */
static int64_t global_index(int l, int nb, int coord, int procs)
{
    return ((int64_t)(l / nb) * procs + coord) * nb + l % nb;
}

/* An m×n matrix in nb×nb blocks over the grid, filled from the hash (`salt` tells A from b). */
static int dmatrix_create(struct dmatrix *m, const struct grid *g, int rows, int cols, int nb,
                          uint64_t seed, uint64_t salt)
{
    const int zero = 0;
    m->mp = numroc_(&rows, &nb, &g->row, &zero, &g->p);
    m->nq = numroc_(&cols, &nb, &g->col, &zero, &g->q);
    const int lld = m->mp > 1 ? m->mp : 1;
    int info = 0;
    descinit_(m->desc, &rows, &cols, &nb, &nb, &zero, &zero, &g->context, &lld, &info);
    m->local = malloc(sizeof *m->local * (size_t)lld * (size_t)(m->nq > 1 ? m->nq : 1));
    if (info != 0 || m->local == NULL)
        return -1;
    for (int lj = 0; lj < m->nq; lj++)
        for (int li = 0; li < m->mp; li++) {
            const int64_t i = global_index(li, nb, g->row, g->p);
            const int64_t j = global_index(lj, nb, g->col, g->q);
            m->local[(size_t)li + (size_t)lj * (size_t)lld] =
                uniform(seed, salt + (uint64_t)(i + j * rows));
        }
    return 0;
}

/* A copy with the same distribution. */
static int dmatrix_copy(struct dmatrix *to, const struct dmatrix *from)
{
    *to = *from;
    const size_t bytes =
        sizeof *from->local * (size_t)from->desc[8] * (size_t)(from->nq > 1 ? from->nq : 1);
    to->local = malloc(bytes);
    if (to->local == NULL)
        return -1;
    memcpy(to->local, from->local, bytes);
    return 0;
}

/* ||m||_inf over the grid (pdlange 'I'), the same on every rank. */
static double norm_inf(const struct dmatrix *m)
{
    const int one = 1;
    double *work = malloc(sizeof *work * (size_t)(m->mp > 1 ? m->mp : 1));
    const double norm =
        pdlange_("I", &m->desc[2], &m->desc[3], m->local, &one, &one, m->desc, work, 1);
    free(work);
    return norm;
}

/* The file `address` lies in (its base name). */
static const char *library_at(void *address)
{
    Dl_info info;
    if (address == NULL || dladdr(address, &info) == 0 || info.dli_fname == NULL)
        return "(not found)";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash != NULL ? slash + 1 : info.dli_fname;
}

/* The file serving `symbol` in the process's global lookup scope, which ScaLAPACK's calls bind
 * to (no library involved is linked -Bsymbolic); for dgemm_, the one after our counter. */
static const char *library_of(const char *symbol)
{
    if (strcmp(symbol, "dgemm_") == 0)
        return library_at((void *)next_dgemm);
    return library_at(dlsym(RTLD_DEFAULT, symbol));
}

/* The BLAS/LAPACK calls that ran in clops so far on this rank: clops_lapack_calls() where
 * libclops_lapack is in the process, else -1. */
static int clops_calls(void)
{
    /* POSIX guarantees a data pointer from dlsym() converts to a function pointer. */
    int (*calls)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "clops_lapack_calls");
    return calls != NULL ? calls() : -1;
}

/* Rank 0 prints where each routine goes, and which ones libclops_lapack serves. */
static void print_routing(void)
{
    char served[256] = "";
    printf("BLAS routines pdgesv calls, and the library each goes to:\n");
    for (int k = 0; routines[k] != NULL; k++) {
        const char *lib = library_of(routines[k]);
        printf("  %-8s %s\n", routines[k], lib);
        if (strncmp(lib, "libclops_lapack", 15) == 0)
            host_append(served, sizeof served, ",", routines[k]);
    }
    printf("served by libclops_lapack: %s\n", served[0] != '\0' ? served : "none");
}

struct solve_result {
    int info;
    double seconds, residual;
    long long dgemm_calls, clops_calls; /* summed over the ranks */
    int clops_present;                  /* libclops_lapack is in every rank */
};

/* The matrices of one solve: A and b (overwritten by LU and x), their copies A0 and b0. */
struct system {
    struct dmatrix a, b, a0, b0;
    int *ipiv;
};

static void system_free(struct system *s)
{
    free(s->a.local);
    free(s->b.local);
    free(s->a0.local);
    free(s->b0.local);
    free(s->ipiv);
}

/* Every rank builds its part; all of them go on, or all stop (collective). */
static int system_create(struct system *s, const struct options *o, const struct grid *g)
{
    *s = (struct system){0};
    const int n = o->n;
    int failed = dmatrix_create(&s->a, g, n, n, o->nb, o->seed, 0) != 0 ||
                 dmatrix_create(&s->b, g, n, 1, o->nb, o->seed, (uint64_t)n * (uint64_t)n) != 0 ||
                 dmatrix_copy(&s->a0, &s->a) != 0 || dmatrix_copy(&s->b0, &s->b) != 0 ||
                 (s->ipiv = malloc(sizeof *s->ipiv * (size_t)(s->a.mp + o->nb))) == NULL;
    int failures = 0;
    MPI_Allreduce(&failed, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (failures == 0)
        return 0;
    system_free(s);
    return -1;
}

/* One small dgemm_ through the same path as pdgesv's, untimed: loading libclops, opening its
 * pool and building (or loading from the cache) its kernels happen on the first call that
 * reaches clops, a cost the system BLAS does not have and a benchmark of the solve should not
 * count. */
static void warm_up(void)
{
    enum { N = 64 };
    static double a[N * N], b[N * N], c[N * N];
    const int n = N;
    const double one = 1.0, zero = 0.0;
    for (int i = 0; i < N * N; i++)
        a[i] = b[i] = 1.0 / (1 + i % 7);
    dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n, 1, 1);
}

/* pdgesv on A x = b, timed from a barrier to the slowest rank's end; then the scaled residual
 * with the copies: b0 := b0 - A0 x, ||b0||_inf / (||A0||_inf ||x||_inf N eps), eps = 2^-53 as
 * LAPACK's dlamch('E'). */
static void solve(const struct options *o, struct system *s, struct solve_result *out)
{
    const int n = o->n, one = 1;
    warm_up();
    const long long dgemm_before = dgemm_calls;
    const int clops_before = clops_calls();
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    pdgesv_(&n, &one, s->a.local, &one, &one, s->a.desc, s->ipiv, s->b.local, &one, &one, s->b.desc,
            &out->info);
    double elapsed = MPI_Wtime() - start;
    const long long mine[2] = {dgemm_calls - dgemm_before,
                               clops_before < 0 ? 0 : clops_calls() - clops_before};
    long long sums[2];
    const int present = clops_before >= 0;
    MPI_Allreduce(&elapsed, &out->seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(mine, sums, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&present, &out->clops_present, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    out->dgemm_calls = sums[0];
    out->clops_calls = sums[1];

    const double minus_one = -1.0, plus_one = 1.0;
    pdgemv_("N", &n, &n, &minus_one, s->a0.local, &one, &one, s->a0.desc, s->b.local, &one, &one,
            s->b.desc, &one, &plus_one, s->b0.local, &one, &one, s->b0.desc, &one, 1);
    const double r = norm_inf(&s->b0), an = norm_inf(&s->a0), xn = norm_inf(&s->b);
    out->residual = r / (an * xn * (double)n * (DBL_EPSILON / 2));
}

/* Rank 0's report; returns whether the solve passed. */
static int report(const struct options *o, int ranks, const struct solve_result *s)
{
    print_routing();
    const double n = o->n, flops = 2.0 / 3.0 * n * n * n + 1.5 * n * n; /* HPL's count */
    const double gflops = flops / s->seconds * 1e-9;
    const int ok = s->info == 0 && s->residual < residual_threshold;
    printf("pdgesv: N = %d, NB = %d, grid %dx%d (%d ranks): info %d, %.3f s, %.2f GFLOP/s\n", o->n,
           o->nb, o->p, o->q, ranks, s->info, s->seconds, gflops);
    if (s->clops_present)
        printf("dgemm_: %lld calls (all ranks), %lld BLAS/LAPACK calls ran in clops: %s\n",
               s->dgemm_calls, s->clops_calls,
               s->clops_calls == s->dgemm_calls && s->dgemm_calls > 0 ? "every dgemm_ in clops"
                                                                      : "NOT every dgemm_");
    else
        printf("dgemm_: %lld calls (all ranks), libclops_lapack is not in the process\n",
               s->dgemm_calls);
    printf("scaled residual ||Ax-b||/(||A|| ||x|| N eps) = %.4g (threshold %g): %s\n", s->residual,
           residual_threshold, ok ? "PASS" : "FAIL");
    printf("RESULT n=%d nb=%d grid=%dx%d ranks=%d time_s=%.4f gflops=%.3f residual=%.4g "
           "dgemm=%s dgemm_calls=%lld clops_calls=%lld\n",
           o->n, o->nb, o->p, o->q, ranks, s->seconds, gflops, s->residual, library_of("dgemm_"),
           s->dgemm_calls, s->clops_present ? s->clops_calls : -1);
    return ok;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    /* POSIX guarantees a data pointer from dlsym() converts to a function pointer. */
    next_dgemm = (dgemm_fn *)dlsym(RTLD_NEXT, "dgemm_");
    int me = 0, ranks = 1;
    Cblacs_pinfo(&me, &ranks);
    struct options o;
    const int bad = parse_options(argc, argv, &o);
    if (!bad && o.p == 0)
        default_grid(ranks, &o.p, &o.q);
    if (bad || o.p * o.q != ranks || next_dgemm == NULL) {
        if (me == 0 && !bad && next_dgemm == NULL)
            fprintf(stderr, "pdgesv: no dgemm_ after the program's in the lookup order\n");
        else if (me == 0)
            fprintf(stderr, "%s%s", bad ? "" : "pdgesv: the grid's P×Q must be the ranks\n", usage);
        MPI_Finalize();
        return EXIT_USAGE;
    }
    struct grid g = {.p = o.p, .q = o.q};
    Cblacs_get(-1, 0, &g.context);
    Cblacs_gridinit(&g.context, "Row-major", o.p, o.q);
    Cblacs_gridinfo(g.context, &g.p, &g.q, &g.row, &g.col);

    struct system sys;
    int rc = EXIT_FAILED;
    if (system_create(&sys, &o, &g) != 0) {
        if (me == 0)
            fprintf(stderr, "pdgesv: no memory for N = %d on %d ranks\n", o.n, ranks);
    } else {
        struct solve_result s = {0};
        solve(&o, &sys, &s);
        if (me == 0 && report(&o, ranks, &s))
            rc = 0;
        system_free(&sys);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    Cblacs_gridexit(g.context);
    MPI_Finalize();
    return rc;
}
