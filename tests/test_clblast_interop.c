/* test_clblast_interop.c — clops between two calls of CLBlast, a BLAS nobody here wrote (issue 23,
 * item 4): the test's own context, one cl_mem A and two in-order queues, CLBlast on one and a
 * clops stream on the other, ordered by nothing but cl_events. CLBlast makes A = X·Y + n·Q (Q a
 * random permutation), clops factors it in place (lu) after CLBlast's event, CLBlast copies the
 * factors out after clops' exported completion; P·A = L·U is checked against the A the test
 * computes in long double (LAPACK's scaled residual). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <check.h>
#include <clblast_c.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_names.h"
#include "testutil.h"

enum { SKIP = 77 };

/* LAPACK's acceptance bound for the scaled residual of a factorization (its test programs'
 * THRESH). */
static const double residual_bound = 30.0;

static const struct clops_api *api;

/* ---- The host's OpenCL objects ------------------------------------------------------------- */

struct host_cl {
    cl_device_id device;
    cl_context context;
    cl_command_queue blas_queue;  /* queue 1: CLBlast's calls and the host's reads */
    cl_command_queue clops_queue; /* queue 2: the clops stream's */
    struct clops_pool *pool;
    struct clops_stream *stream;
};

static int has_fp64(cl_device_id device)
{
    cl_device_fp_config fp64 = 0;
    clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
    return fp64 != 0;
}

static int is_pocl(cl_platform_id platform)
{
    char name[128] = "";
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    return strstr(name, "Portable Computing Language") != NULL;
}

/* PoCL's device where there is one, else any with double precision; 0 when none has it. */
static int pick_device(cl_device_id *out)
{
    cl_platform_id platforms[16];
    cl_uint platform_count = 0;
    if (clGetPlatformIDs(16, platforms, &platform_count) != CL_SUCCESS)
        return 0;
    if (platform_count > 16)
        platform_count = 16;
    int found = 0;
    for (cl_uint p = 0; p < platform_count; p++) {
        cl_device_id devices[16];
        cl_uint count = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 16, devices, &count) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < count && d < 16; d++) {
            if (!has_fp64(devices[d]) || (found && !is_pocl(platforms[p])))
                continue;
            *out = devices[d];
            if (is_pocl(platforms[p]))
                return 1;
            found = 1;
        }
    }
    return found;
}

static void assert_cl(cl_int rc, const char *what)
{
    ck_assert_msg(rc == CL_SUCCESS, "%s: %s", what, cl_error_name(rc));
}

/* CLBlast's codes are OpenCL's, or its own from -1024 down (clblast_c.h names them). */
static void assert_clblast(CLBlastStatusCode rc, const char *what)
{
    ck_assert_msg(rc == CLBlastSuccess, "%s: CLBlast status %d (%s)", what, (int)rc,
                  rc > -1024 ? cl_error_name((cl_int)rc) : "CLBlast's own, see clblast_c.h");
}

/* A context with two in-order queues on the device, a clops pool on that context, and a clops
 * stream on queue 2. */
static struct host_cl host_open(void)
{
    struct host_cl h = {0};
    ck_assert_msg(pick_device(&h.device), "no OpenCL device with double precision");
    cl_int rc;
    h.context = clCreateContext(NULL, 1, &h.device, NULL, NULL, &rc);
    assert_cl(rc, "clCreateContext");
    h.blas_queue = clCreateCommandQueue(h.context, h.device, 0, &rc);
    assert_cl(rc, "clCreateCommandQueue (CLBlast's)");
    h.clops_queue = clCreateCommandQueue(h.context, h.device, 0, &rc);
    assert_cl(rc, "clCreateCommandQueue (clops')");

    void *devices[1] = {h.device};
    struct clops_pool_from_cl_args p = {
        .struct_size = sizeof p, .device_count = 1, .cl_context = h.context, .cl_devices = devices};
    ck_assert_msg(api->pool_create_from_cl(&p) == CLOPS_OK, "%s", api->last_error());
    h.pool = p.pool;
    struct clops_stream_create_args s = {
        .struct_size = sizeof s, .pool = h.pool, .cl_queue = h.clops_queue};
    ck_assert_msg(api->stream_create(&s) == CLOPS_OK, "%s", api->last_error());
    h.stream = s.stream;
    return h;
}

static void host_close(struct host_cl *h)
{
    struct clops_stream_release_args s = {.struct_size = sizeof s, .stream = h->stream};
    ck_assert_int_eq(api->stream_release(&s), CLOPS_OK);
    api->pool_release(h->pool);
    /* CLBlast keeps its compiled programs, which hold the context, until told. */
    assert_clblast(CLBlastClearCache(), "CLBlastClearCache");
    clReleaseCommandQueue(h->clops_queue);
    clReleaseCommandQueue(h->blas_queue);
    /* Everything clops and CLBlast retained of the context is given back by now. */
    /* The driver may drop what its finished commands' events hold a moment later, on its own
     * thread (PoCL does): wait up to 5 s for the count to come down. */
    cl_uint refs = 0;
    for (int i = 0; i < 500; i++) {
        assert_cl(
            clGetContextInfo(h->context, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL),
            "clGetContextInfo");
        if (refs == 1)
            break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    ck_assert_uint_eq(refs, 1);
    clReleaseContext(h->context);
}

static cl_mem device_matrix(const struct host_cl *h, int64_t n, const double *data)
{
    const size_t bytes = sizeof(double) * (size_t)(n * n);
    cl_int rc;
    cl_mem m = clCreateBuffer(h->context, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    assert_cl(rc, "clCreateBuffer");
    if (data != NULL)
        assert_cl(clEnqueueWriteBuffer(h->blas_queue, m, CL_TRUE, 0, bytes, data, 0, NULL, NULL),
                  "clEnqueueWriteBuffer");
    return m;
}

static cl_int cl_event_status(cl_event e)
{
    cl_int status = 0;
    assert_cl(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL),
              "clGetEventInfo");
    return status;
}

/* ---- One factorization between two CLBlast calls -------------------------------------------- */

/* Column-major n×n matrices: element (i, j) at i + j*n. */
struct lu_case {
    int64_t n;
    double *x, *y, *factors;
    long double *a; /* X·Y + n·Q, in long double */
    int32_t *ipiv, info;
    cl_mem mx, my, ma, mf; /* X, Y, A (factored in place), the factors' copy */
    struct clops_buffer *wrapped_a;
};

static void lu_case_make(struct lu_case *c, const struct host_cl *h, int64_t n, uint64_t seed)
{
    *c = (struct lu_case){.n = n, .info = -7};
    tu_seed(seed);
    c->x = tu_random_elements(CLOPS_F64, n * n);
    c->y = tu_random_elements(CLOPS_F64, n * n);
    c->factors = tu_malloc(sizeof(double) * (size_t)(n * n));
    c->a = tu_malloc(sizeof(long double) * (size_t)(n * n));
    c->ipiv = tu_malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        c->ipiv[i] = -7; /* written only at the call's completion */
    /* The boost n·Q, Q a random permutation (Fisher-Yates): cond_1(A) stays under 30 (as with
     * n·I) while partial pivoting must interchange rows at nearly every step (n·I needs none). */
    int64_t *q = tu_malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        q[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)((tu_uniform() + 1) / 2 * (double)(i + 1));
        j = j > i ? i : j;
        const int64_t t = q[i];
        q[i] = q[j];
        q[j] = t;
    }
    double *boost = tu_malloc(sizeof(double) * (size_t)(n * n));
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
            long double s = i == q[j] ? (long double)n : 0.0L;
            for (int64_t k = 0; k < n; k++)
                s += (long double)c->x[i + k * n] * c->y[k + j * n];
            c->a[i + j * n] = s;
            boost[i + j * n] = i == q[j] ? (double)n : 0.0;
        }
    free(q);
    c->mx = device_matrix(h, n, c->x);
    c->my = device_matrix(h, n, c->y);
    c->ma = device_matrix(h, n, boost); /* n·Q: gemm's beta = 1 adds X·Y to it */
    c->mf = device_matrix(h, n, NULL);
    free(boost);
    struct clops_buffer_wrap_args w = {.struct_size = sizeof w, .pool = h->pool, .cl_mem = c->ma};
    ck_assert_msg(api->buffer_wrap_cl(&w) == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(w.bytes, (int64_t)sizeof(double) * n * n);
    c->wrapped_a = w.buffer;
}

static void lu_case_free(struct lu_case *c)
{
    api->buffer_release(c->wrapped_a);
    clReleaseMemObject(c->mx);
    clReleaseMemObject(c->my);
    clReleaseMemObject(c->ma);
    clReleaseMemObject(c->mf);
    free(c->x);
    free(c->y);
    free(c->factors);
    free(c->a);
    free(c->ipiv);
}

/* Queue 1: A += X·Y (CLBlast). */
static cl_event enqueue_clblast_gemm(const struct host_cl *h, struct lu_case *c)
{
    const size_t n = (size_t)c->n;
    cl_command_queue q = h->blas_queue;
    cl_event done = NULL;
    assert_clblast(CLBlastDgemm(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n,
                                n, 1.0, c->mx, 0, n, c->my, 0, n, 1.0, c->ma, 0, n, &q, &done),
                   "CLBlastDgemm");
    ck_assert_ptr_nonnull(done);
    return done;
}

/* Queue 2: clops' lu of the wrapped A, after `after` (CLBlast's event) and nothing else. */
static struct clops_event *submit_lu(const struct host_cl *h, struct lu_case *c, cl_event after)
{
    const struct clops_tensor a =
        clops_matrix_on_device(c->wrapped_a, CLOPS_F64, c->n, c->n, c->n, 1);
    const struct clops_tensor ipiv = {
        .data = c->ipiv, .dtype = CLOPS_I32, .rank = 1, .shape = {c->n}, .strides = {1}};
    const struct clops_tensor info = {
        .data = &c->info, .dtype = CLOPS_I32, .rank = 1, .shape = {1}, .strides = {1}};
    const struct clops_arg args[] = {
        {.name = "a", .kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &a},
        {.name = "ipiv", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &ipiv},
        {.name = "info", .kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &info},
    };
    void *const waits[1] = {after};
    struct clops_submit_args s = {.struct_size = sizeof s,
                                  .op_index = api->op_index(tu_op("lu")),
                                  .stream = h->stream,
                                  .args = args,
                                  .nargs = (int32_t)TU_COUNT(args),
                                  .arg_size = sizeof args[0],
                                  .cl_wait_count = 1,
                                  .cl_wait_events = waits};
    ck_assert_msg(api->submit(&s) == CLOPS_OK, "submit lu: %s", api->last_error());
    ck_assert_ptr_nonnull(s.event);
    return s.event;
}

/* Queue 1: F = A (CLBlast reading the factors), after clops' exported completion. */
static cl_event enqueue_clblast_copy(const struct host_cl *h, struct lu_case *c,
                                     struct clops_event *lu)
{
    struct clops_event_cl_args x = {.struct_size = sizeof x, .event = lu};
    ck_assert_msg(api->event_cl_event(&x) == CLOPS_OK, "%s", api->last_error());
    cl_event lu_done = x.cl_event;
    ck_assert_ptr_nonnull(lu_done);
    /* CLBlast's calls take no wait list: a barrier on its in-order queue holds them instead. */
    assert_cl(clEnqueueBarrierWithWaitList(h->blas_queue, 1, &lu_done, NULL),
              "clEnqueueBarrierWithWaitList");
    clReleaseEvent(lu_done); /* the barrier retained it */
    cl_command_queue q = h->blas_queue;
    cl_event copied = NULL;
    assert_clblast(CLBlastDcopy((size_t)(c->n * c->n), c->ma, 0, 1, c->mf, 0, 1, &q, &copied),
                   "CLBlastDcopy");
    return copied;
}

static void read_factors(const struct host_cl *h, struct lu_case *c, cl_event copied)
{
    assert_cl(clEnqueueReadBuffer(h->blas_queue, c->mf, CL_TRUE, 0,
                                  sizeof(double) * (size_t)(c->n * c->n), c->factors, 1, &copied,
                                  NULL),
              "clEnqueueReadBuffer");
}

static struct clops_event_query_args query(struct clops_event *e)
{
    struct clops_event_query_args q = {.struct_size = sizeof q, .event = e};
    ck_assert_int_eq(api->event_query(&q), CLOPS_OK);
    return q;
}

static void release_event(struct clops_event *e)
{
    struct clops_event_release_args r = {.struct_size = sizeof r, .event = e};
    ck_assert_int_eq(api->event_release(&r), CLOPS_OK);
}

/* ---- The check: LAPACK's dget01 ------------------------------------------------------------ */

/* ||P·A - L·U||_1 / (n ||A||_1 eps), with A the long double reference and L, U the factors the
 * device computed; dget01's eps is the unit roundoff, 2^-53. */
static double lu_scaled_residual(const struct lu_case *c)
{
    const int64_t n = c->n;
    long double *pa = tu_malloc(sizeof(long double) * (size_t)(n * n));
    memcpy(pa, c->a, sizeof(long double) * (size_t)(n * n));
    for (int64_t k = 0; k < n; k++) {
        const int64_t p = c->ipiv[k] - 1; /* LAPACK's order: row k swapped with row p, k first */
        for (int64_t j = 0; j < n; j++) {
            long double t = pa[k + j * n];
            pa[k + j * n] = pa[p + j * n];
            pa[p + j * n] = t;
        }
    }
    long double diff_norm = 0, a_norm = 0;
    for (int64_t j = 0; j < n; j++) {
        long double diff_col = 0, a_col = 0;
        for (int64_t i = 0; i < n; i++) {
            /* (L·U)(i, j) = sum over k <= min(i, j) of L(i, k) U(k, j), L's diagonal 1. */
            const int64_t last = i < j ? i : j;
            long double lu = 0;
            for (int64_t k = 0; k <= last; k++) {
                const long double l = k == i ? 1.0L : c->factors[i + k * n];
                lu += l * c->factors[k + j * n];
            }
            diff_col += fabsl(pa[i + j * n] - lu);
            a_col += fabsl(c->a[i + j * n]);
        }
        diff_norm = fmaxl(diff_norm, diff_col);
        a_norm = fmaxl(a_norm, a_col);
    }
    free(pa);
    return (double)(diff_norm / ((long double)n * a_norm * 0x1p-53L));
}

/* info 0 (A is far from singular), every pivot a row at or below its step's, the residual within
 * LAPACK's bound; returns the residual and the number of row interchanges. */
static double assert_factorization(const struct lu_case *c, int *interchanges)
{
    ck_assert_int_eq(c->info, 0);
    *interchanges = 0;
    for (int64_t k = 0; k < c->n; k++) {
        ck_assert_msg(c->ipiv[k] >= k + 1 && c->ipiv[k] <= c->n,
                      "n = %lld: ipiv[%lld] = %d, expected %lld to %lld", (long long)c->n,
                      (long long)k, c->ipiv[k], (long long)k + 1, (long long)c->n);
        *interchanges += c->ipiv[k] != k + 1;
    }
    /* A's large entries lie off its diagonal: a factorization without pivoting has none. */
    ck_assert_msg(*interchanges > 0, "n = %lld: no row interchanged", (long long)c->n);
    const double residual = lu_scaled_residual(c);
    ck_assert_msg(residual < residual_bound,
                  "n = %lld: ||PA - LU|| / (n ||A|| eps) = %.3g, bound %g", (long long)c->n,
                  residual, residual_bound);
    return residual;
}

/* ---- Tests ----------------------------------------------------------------------------------- */

static void setup(void)
{
    api = tu_api();
}

/* CLBlast's gemm event is clops' only reason to wait, clops' exported completion CLBlast's: the
 * whole chain is enqueued before the host waits for anything. */
START_TEST(test_lu_between_clblast_calls_ordered_by_cl_events)
{
    static const int64_t sizes[] = {67, 200};
    const int64_t n = sizes[_i];
    struct host_cl h = host_open();
    struct lu_case c;
    lu_case_make(&c, &h, n, 2300 + (uint64_t)n);

    cl_event gemm_done = enqueue_clblast_gemm(&h, &c);
    struct clops_event *lu = submit_lu(&h, &c, gemm_done);
    clReleaseEvent(gemm_done); /* clops retained it */
    cl_event copied = enqueue_clblast_copy(&h, &c, lu);
    read_factors(&h, &c, copied);
    clReleaseEvent(copied);

    /* The copy ran after clops' completion, host outputs included. */
    const struct clops_event_query_args q = query(lu);
    ck_assert_int_eq(q.state, CLOPS_EVENT_COMPLETE);
    ck_assert_int_eq(q.status, CLOPS_OK);
    int interchanges;
    const double residual = assert_factorization(&c, &interchanges);
    printf("test_clblast_interop: n = %lld: scaled residual %.3f, %d row interchanges\n",
           (long long)n, residual, interchanges);
    release_event(lu);
    lu_case_free(&c);
    host_close(&h);
}
END_TEST

/* CLBlast's gemm held back behind a user event for 20 ms: clops' lu stays queued or running with
 * its host outputs untouched, and the factors are right only because it waited (A holds n·Q
 * until the gemm runs). */
START_TEST(test_lu_waits_for_a_held_back_clblast_event)
{
    const int64_t n = 200;
    struct host_cl h = host_open();
    struct lu_case c;
    lu_case_make(&c, &h, n, 2400);
    cl_int rc;
    cl_event gate = clCreateUserEvent(h.context, &rc);
    assert_cl(rc, "clCreateUserEvent");
    assert_cl(clEnqueueBarrierWithWaitList(h.blas_queue, 1, &gate, NULL),
              "clEnqueueBarrierWithWaitList");

    cl_event gemm_done = enqueue_clblast_gemm(&h, &c);
    struct clops_event *lu = submit_lu(&h, &c, gemm_done);
    cl_event copied = enqueue_clblast_copy(&h, &c, lu);

    const struct timespec held = {0, 20 * 1000 * 1000};
    nanosleep(&held, NULL);
    const struct clops_event_query_args q = query(lu);
    ck_assert_msg(q.state == CLOPS_EVENT_QUEUED || q.state == CLOPS_EVENT_RUNNING,
                  "lu's state is %d with CLBlast's gemm held back", (int)q.state);
    ck_assert_int_eq(q.status, CLOPS_OK);
    ck_assert_int_eq(c.ipiv[0], -7);
    ck_assert_int_eq(c.info, -7);
    ck_assert_int_ne(cl_event_status(gemm_done), CL_COMPLETE);
    ck_assert_int_ne(cl_event_status(copied), CL_COMPLETE);

    assert_cl(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
    clReleaseEvent(gate);
    read_factors(&h, &c, copied);
    clReleaseEvent(copied);
    clReleaseEvent(gemm_done);

    ck_assert_int_eq(query(lu).state, CLOPS_EVENT_COMPLETE);
    int interchanges;
    const double residual = assert_factorization(&c, &interchanges);
    printf("test_clblast_interop: held back 20 ms, n = %lld: scaled residual %.3f\n", (long long)n,
           residual);
    release_event(lu);
    lu_case_free(&c);
    host_close(&h);
}
END_TEST

int main(void)
{
    cl_device_id device;
    if (!pick_device(&device)) {
        printf("test_clblast_interop: SKIP: no OpenCL device with double precision\n");
        return SKIP;
    }
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("clblast", setup, NULL),
        TU_LOOP(test_lu_between_clblast_calls_ordered_by_cl_events, 2),
        TU_TEST(test_lu_waits_for_a_held_back_clblast_event),
    };
    return tu_run_tests("clblast_interop", 600, 0, tests, TU_COUNT(tests));
}
