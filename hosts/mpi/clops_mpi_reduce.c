/* clops_mpi_reduce.c — clops-mpi-reduce: every MPI rank opens its own clops pool (dlopen, ABI
 * negotiation, a GPU picked by the node-local rank), reduces its slice of one deterministic
 * vector with clops's reduce operator (sum and norm2), and rank 0 combines the slices with
 * MPI_Reduce and checks the result against a host computation in long double. */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clops.h"
#include "loader.h"
#include "util.h"

static const char usage[] =
    "usage: mpirun -np RANKS clops-mpi-reduce [-n ELEMENTS] [--seed S] [--config FILE]\n"
    "Each rank reduces (sum, norm2) its slice of the vector x(i) = u(i) + 1/4, u uniform in\n"
    "[-1, 1) from a hash of (S, i), on its own clops pool; rank 0 combines the slices and\n"
    "checks them against the host. Device: with --config FILE, that pool; otherwise GPU\n"
    "(node-local rank mod the GPUs OpenCL lists), or the CPU device where there is none.\n"
    "Exit status: 0 the results are within their bounds, 1 they are not or a rank failed,\n"
    "2 usage error.\n";

enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };

struct options {
    int64_t n;
    uint64_t seed;
    const char *config;
};

/* splitmix64's finaliser: x(i) depends on (seed, i) alone, so every rank generates its own
 * slice and rank 0 the whole vector, with no communication. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) plus 1/4: the sum grows with n instead of cancelling to noise. */
static double element(uint64_t seed, int64_t i)
{
    uint64_t r = mix(seed * 0x9e3779b97f4a7c15u + (uint64_t)i);
    return (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0 + 0.25;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.n = 10000019, .seed = 1};
    for (int a = 1; a < argc; a++) {
        char *end = NULL;
        errno = 0;
        if (strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
            o->n = strtoll(argv[++a], &end, 10);
            if (*end != '\0' || errno != 0 || o->n < 1)
                return -1;
        } else if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc) {
            o->seed = strtoull(argv[++a], &end, 0);
            if (*end != '\0' || errno != 0)
                return -1;
        } else if (strcmp(argv[a], "--config") == 0 && a + 1 < argc) {
            o->config = argv[++a];
        } else {
            return -1;
        }
    }
    return 0;
}

/* The rank's index among the ranks of its node: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, else
 * (another MPI) the rank in MPI_COMM_TYPE_SHARED's split of the world. Collective. */
static int node_local_rank(void)
{
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    const char *ompi = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    return ompi != NULL && ompi[0] != '\0' ? atoi(ompi) : local;
}

/* The GPUs OpenCL lists on this node, in `clops devices` order. */
static int32_t gpu_count(const struct clops_api *api)
{
    int32_t count = 0, gpus = 0;
    if (api->devices_list(NULL, 0, &count) != CLOPS_OK || count <= 0)
        return 0;
    struct clops_device_info *list = host_xcalloc((size_t)count, sizeof *list);
    for (int32_t i = 0; i < count; i++)
        list[i].struct_size = sizeof *list;
    if (api->devices_list(list, count, &count) == CLOPS_OK)
        for (int32_t i = 0; i < count; i++)
            gpus += list[i].type == CLOPS_DEVICE_GPU;
    free(list);
    return gpus;
}

/* The rank's pool: the configuration file when one is given; else GPU (local rank mod GPUs),
 * so that the ranks of a node spread over its GPUs and share them evenly when there are more
 * ranks than GPUs; else the default pool (the CPU device). */
static int32_t open_pool(const struct clops_api *api, const char *config, int local_rank,
                         struct clops_pool **pool)
{
    if (config != NULL)
        return api->pool_create_from_file(config, pool);
    const int32_t gpus = gpu_count(api);
    if (gpus == 0)
        return api->pool_create_default(pool);
    char text[160];
    snprintf(text, sizeof text, "devices = ({ type = \"gpu\"; index = %d; });",
             local_rank % (int)gpus);
    return api->pool_create_from_string(text, pool);
}

/* The index of `value` among the values of the enum parameter `param` of `op`, or -1: what the
 * typed entry takes for an enum. */
static int32_t enum_index(const struct clops_op *op, const char *param, const char *value)
{
    for (int32_t k = 0; k < op->param_count; k++) {
        const struct clops_param *p = clops_op_param(op, k);
        if (strcmp(p->name, param) != 0 || p->enum_values == NULL)
            continue;
        for (int32_t v = 0; p->enum_values[v] != NULL; v++)
            if (strcmp(p->enum_values[v], value) == 0)
                return v;
    }
    return -1;
}

/* One rank's part: its slice's sum and norm2 from clops, and a line saying where they ran. */
struct rank_result {
    double sum, norm2;
    char line[200];
};

static int32_t reduce_slice(const struct clops_api *api, struct clops_pool *pool, const double *x,
                            int64_t count, struct rank_result *r)
{
    const struct clops_op *reduce = api->op_find("reduce");
    if (reduce == NULL)
        return CLOPS_ERR_NOT_FOUND;
    const int32_t sum = enum_index(reduce, "op", "sum"), norm2 = enum_index(reduce, "op", "norm2");
    if (sum < 0 || norm2 < 0)
        return CLOPS_ERR_NOT_FOUND;
    struct clops_tensor tx = {.data = (void *)x, .dtype = CLOPS_F64, .rank = 1};
    tx.shape[0] = count;
    tx.strides[0] = 1;
    struct clops_tensor tsum = {.data = &r->sum, .dtype = CLOPS_F64, .rank = 1};
    tsum.shape[0] = 1;
    tsum.strides[0] = 1;
    struct clops_tensor tnorm = tsum;
    tnorm.data = &r->norm2;
    clops_reduce_fn fn = (clops_reduce_fn)reduce->entry;
    int32_t status = fn(pool, &tx, &tsum, sum, -1);
    if (status == CLOPS_OK)
        status = fn(pool, &tx, &tnorm, norm2, -1);
    return status;
}

/* Loads clops, opens the pool and reduces [lo, hi); on failure r->line says why. */
static int32_t run_rank(const struct options *o, int rank, int local_rank, int64_t lo, int64_t hi,
                        struct rank_result *r)
{
    struct host_library lib;
    char why[2048];
    if (host_library_load(&lib, why, sizeof why) != 0) {
        snprintf(r->line, sizeof r->line, "rank %d: cannot load libclops: %.150s", rank, why);
        return CLOPS_ERR_NOT_FOUND;
    }
    const struct clops_api *api = lib.api;
    host_library_log_to_stderr(&lib, 0); /* a device skipped, a fallback to the CPU */
    struct clops_pool *pool = NULL;
    int32_t status = open_pool(api, o->config, local_rank, &pool);
    double *x = NULL;
    if (status == CLOPS_OK) {
        x = host_xmalloc(sizeof *x * (size_t)(hi > lo ? hi - lo : 1));
        for (int64_t i = lo; i < hi; i++)
            x[i - lo] = element(o->seed, i);
        status = reduce_slice(api, pool, x, hi - lo, r);
    }
    if (status != CLOPS_OK) {
        snprintf(r->line, sizeof r->line, "rank %d: %s: %.150s", rank, api->status_name(status),
                 api->last_error());
    } else {
        struct clops_device_info dev = {.struct_size = sizeof dev};
        api->pool_device_info(pool, 0, &dev);
        snprintf(r->line, sizeof r->line, "rank %d (node-local %d): x[%lld, %lld) on %s %.80s",
                 rank, local_rank, (long long)lo, (long long)hi,
                 dev.type == CLOPS_DEVICE_GPU ? "GPU" : "CPU", dev.name);
    }
    free(x);
    api->pool_release(pool);
    return status;
}

/* |computed - reference| in units of `scale` * u (u = 2^-53, double's unit roundoff). */
static double error_in_u(double computed, long double reference, long double scale)
{
    return (double)(fabsl((long double)computed - reference) / (scale * 0x1p-53L));
}

/* Rank 0: the whole vector on the host in long double, and the combined results against it.
 * The bound is sqrt(n) u times the sum of |x(i)| (for norm2: times the norm): rounding errors of
 * random sign grow as sqrt(n) (Higham, Accuracy and Stability, 2nd ed., §4.2); a lost, doubled
 * or misplaced slice is off by about n/ranks times the mean |x|, far beyond it. */
static int check_on_host(const struct options *o, int ranks, double sum, double norm2)
{
    long double ref_sum = 0, ref_sq = 0, abs_sum = 0;
    for (int64_t i = 0; i < o->n; i++) {
        long double v = element(o->seed, i);
        ref_sum += v;
        ref_sq += v * v;
        abs_sum += fabsl(v);
    }
    const long double ref_norm = sqrtl(ref_sq);
    const double bound = sqrt((double)o->n);
    const double e_sum = error_in_u(sum, ref_sum, abs_sum),
                 e_norm = error_in_u(norm2, ref_norm, ref_norm);
    const int ok_sum = e_sum <= bound, ok_norm = e_norm <= bound;
    printf("sum   = %.17g (host %.17Lg): error %.3g u*sum|x|, bound sqrt(n) = %.1f: %s\n", sum,
           ref_sum, e_sum, bound, ok_sum ? "ok" : "FAILED");
    printf("norm2 = %.17g (host %.17Lg): error %.3g u*norm2, bound sqrt(n) = %.1f: %s\n", norm2,
           ref_norm, e_norm, bound, ok_norm ? "ok" : "FAILED");
    printf("%s: %d ranks, n = %lld\n", ok_sum && ok_norm ? "PASS" : "FAIL", ranks, (long long)o->n);
    return ok_sum && ok_norm;
}

int main(int argc, char **argv)
{
    host_program_name = "clops-mpi-reduce";
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    struct options o;
    if (parse_options(argc, argv, &o) != 0) {
        if (rank == 0)
            fputs(usage, stderr);
        MPI_Finalize();
        return EXIT_USAGE;
    }
    const int local_rank = node_local_rank();
    /* Block distribution: rank r has x[n r / ranks, n (r + 1) / ranks). */
    const int64_t lo = o.n * rank / ranks, hi = o.n * (rank + 1) / ranks;
    struct rank_result r = {0};
    const int failed = run_rank(&o, rank, local_rank, lo, hi, &r) != CLOPS_OK;

    /* Every rank's line, in rank order, and how many ranks failed; then the sums. */
    char *lines = rank == 0 ? host_xmalloc(sizeof r.line * (size_t)ranks) : NULL;
    MPI_Gather(r.line, sizeof r.line, MPI_CHAR, lines, sizeof r.line, MPI_CHAR, 0, MPI_COMM_WORLD);
    int failures = 0;
    MPI_Allreduce(&failed, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* The norms combine as squares: norm2(x)^2 is the sum of the slices' norm2^2. */
    const double mine[2] = {r.sum, r.norm2 * r.norm2};
    double total[2] = {0, 0};
    const long long counted[2] = {hi - lo, 1};
    long long counts[2] = {0, 0};
    MPI_Reduce(mine, total, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(counted, counts, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    int rc = 0;
    if (rank == 0) {
        for (int k = 0; k < ranks; k++)
            printf("%s\n", lines + (size_t)k * sizeof r.line);
        printf("combined on rank 0: %lld ranks took part, %lld elements reduced\n", counts[1],
               counts[0]);
        if (failures > 0) {
            printf("FAIL: %d of %d ranks could not reduce their slice\n", failures, ranks);
            rc = EXIT_FAILED;
        } else if (counts[0] != o.n ||
                   !check_on_host(&o, (int)counts[1], total[0], sqrt(total[1]))) {
            rc = EXIT_FAILED;
        }
        free(lines);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
