/* test_interop.c — clops on the host's own OpenCL objects (ABI 1.4 interop): a pool on a
 * context, device and queue this test makes with raw OpenCL, the test's cl_mem wrapped without a
 * copy and computed on, the getters, the memory statistics, and every refusal with its message.
 * Linked with the core (the table through entry_table), so that the buffer copy's internals,
 * which streams call, are tested too. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "buffer_copy.h"
#include "entry.h"
#include "testutil.h"

static const struct clops_api *api;

/* The host's OpenCL objects: what a host such as pyopencl holds before it meets clops. */
struct host_cl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
};

static struct host_cl host_open(void)
{
    struct host_cl h = {0};
    cl_uint n = 0;
    ck_assert_int_eq(clGetPlatformIDs(1, &h.platform, &n), CL_SUCCESS);
    ck_assert_int_eq(clGetDeviceIDs(h.platform, CL_DEVICE_TYPE_ALL, 1, &h.device, NULL),
                     CL_SUCCESS);
    cl_int rc;
    h.context = clCreateContext(NULL, 1, &h.device, NULL, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    h.queue = clCreateCommandQueue(h.context, h.device, 0, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    return h;
}

static void host_close(struct host_cl *h)
{
    clReleaseCommandQueue(h->queue);
    clReleaseContext(h->context);
}

static cl_uint context_refs(cl_context context)
{
    cl_uint refs = 0;
    ck_assert_int_eq(
        clGetContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL),
        CL_SUCCESS);
    return refs;
}

static cl_uint queue_refs(cl_command_queue queue)
{
    cl_uint refs = 0;
    ck_assert_int_eq(
        clGetCommandQueueInfo(queue, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL),
        CL_SUCCESS);
    return refs;
}

static cl_uint mem_refs(cl_mem mem)
{
    cl_uint refs = 0;
    ck_assert_int_eq(clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL),
                     CL_SUCCESS);
    return refs;
}

/* Waits until a reference count equals `want`, for up to 5 s: a command's completion does not mean
 * the driver has dropped the references its event holds on the queue, the context and the buffers
 * it used; PoCL drops them a moment later on its own thread (seen under ASan and under Wine in CI).
 * The assertion that follows reads the count again: a reference clops kept stays and fails it. */
#define AWAIT_COUNT(count, want)                                                                   \
    for (int i_ = 0; i_ < 500 && (count) != (want); i_++)                                          \
    nanosleep(&(struct timespec){0, 10000000}, NULL)

static cl_mem host_buffer(const struct host_cl *h, size_t bytes, const void *data)
{
    cl_int rc;
    cl_mem mem = clCreateBuffer(h->context, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    if (data != NULL)
        ck_assert_int_eq(
            clEnqueueWriteBuffer(h->queue, mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL),
            CL_SUCCESS);
    return mem;
}

/* A pool on the host's context and device, on its queue (with_queue) or on clops' own. */
static struct clops_pool *host_pool(const struct host_cl *h, int with_queue, const char *config)
{
    void *devices[1] = {h->device}, *queues[1] = {h->queue};
    struct clops_pool_from_cl_args a = {.struct_size = sizeof a,
                                        .device_count = 1,
                                        .cl_context = h->context,
                                        .cl_devices = devices,
                                        .cl_queues = with_queue ? queues : NULL,
                                        .config_text = config};
    ck_assert_msg(api->pool_create_from_cl(&a) == CLOPS_OK, "%s", api->last_error());
    ck_assert_ptr_nonnull(a.pool);
    return a.pool;
}

static struct clops_buffer *wrap(struct clops_pool *pool, cl_mem mem)
{
    struct clops_buffer_wrap_args a = {.struct_size = sizeof a, .pool = pool, .cl_mem = mem};
    ck_assert_msg(api->buffer_wrap_cl(&a) == CLOPS_OK, "%s", api->last_error());
    size_t size = 0;
    clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    ck_assert_int_eq(a.bytes, (int64_t)size);
    return a.buffer;
}

/* A refused call's status and that its message names what it must. */
static void expect_refusal(int which, int32_t got, int32_t want, const char *needle)
{
    const char *msg = api->last_error();
    ck_assert_msg(got == want, "case %d: expected %s, got %s (%s)", which, api->status_name(want),
                  api->status_name(got), msg);
    ck_assert_msg(strstr(msg, needle) != NULL, "case %d: \"%s\" lacks \"%s\"", which, msg, needle);
}

/* ---- Computing on the host's buffers --------------------------------------------------------- */

/* C = alpha A B + beta C on the test's own cl_mems, row-major, checked against a reference in
 * higher precision (double for f32, long double for f64). */
static void check_gemm_on_wrapped(const struct host_cl *h, struct clops_pool *pool, int32_t dtype,
                                  int64_t m, int64_t n, int64_t k)
{
    const size_t es = (size_t)tu_dtype_size(dtype);
    void *a = tu_random_elements(dtype, m * k), *b = tu_random_elements(dtype, k * n);
    void *c = tu_random_elements(dtype, m * n), *out = tu_malloc((size_t)(m * n) * es);
    cl_mem ma = host_buffer(h, (size_t)(m * k) * es, a),
           mb = host_buffer(h, (size_t)(k * n) * es, b);
    cl_mem mc = host_buffer(h, (size_t)(m * n) * es, c);
    struct clops_buffer *ba = wrap(pool, ma), *bb = wrap(pool, mb), *bc = wrap(pool, mc);
    struct clops_tensor ta = clops_matrix_on_device(ba, dtype, m, k, k, 0);
    struct clops_tensor tb = clops_matrix_on_device(bb, dtype, k, n, n, 0);
    struct clops_tensor tc = clops_matrix_on_device(bc, dtype, m, n, n, 0);
    const double alpha = 1.25, beta = -0.5;
    const struct clops_arg args[] = {
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &ta},
        {.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &tb},
        {.kind = CLOPS_PARAM_TENSOR_INOUT, .tensor = &tc},
        {.name = "alpha", .kind = CLOPS_PARAM_DOUBLE, .d = alpha},
        {.name = "beta", .kind = CLOPS_PARAM_DOUBLE, .d = beta},
    };
    int32_t status = api->invoke_sized(pool, api->op_find("gemm"), args, 5, sizeof args[0]);
    ck_assert_msg(status == CLOPS_OK, "%s", api->last_error());
    /* The result is in the host's cl_mem itself: read it on the host's queue. */
    ck_assert_int_eq(
        clEnqueueReadBuffer(h->queue, mc, CL_TRUE, 0, (size_t)(m * n) * es, out, 0, NULL, NULL),
        CL_SUCCESS);
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            long double ref = 0, got;
            for (int64_t p = 0; p < k; p++)
                ref += dtype == CLOPS_F32
                           ? (long double)((float *)a)[i * k + p] * ((float *)b)[p * n + j]
                           : (long double)((double *)a)[i * k + p] * ((double *)b)[p * n + j];
            ref = alpha * ref +
                  beta * (dtype == CLOPS_F32 ? ((float *)c)[i * n + j] : ((double *)c)[i * n + j]);
            got = dtype == CLOPS_F32 ? ((float *)out)[i * n + j] : ((double *)out)[i * n + j];
            worst = fmax(worst, (double)fabsl(got - ref));
        }
    const double tol = (dtype == CLOPS_F32 ? 1e-6 : 1e-14) * 4.0 * (double)(k + 2);
    ck_assert_msg(worst <= tol, "gemm %s %lldx%lldx%lld on wrapped buffers: error %g > %g",
                  dtype == CLOPS_F32 ? "f32" : "f64", (long long)m, (long long)n, (long long)k,
                  worst, tol);
    api->buffer_release(ba);
    api->buffer_release(bb);
    api->buffer_release(bc);
    /* Released by clops, not freed: the host's reference is the only one left. */
    AWAIT_COUNT(mem_refs(mc), 1);
    ck_assert_uint_eq(mem_refs(mc), 1);
    clReleaseMemObject(ma);
    clReleaseMemObject(mb);
    clReleaseMemObject(mc);
    free(a), free(b), free(c), free(out);
}

static int device_has_fp64(cl_device_id device)
{
    cl_device_fp_config fp64 = 0;
    clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
    return fp64 != 0;
}

START_TEST(test_gemm_on_wrapped_host_buffers_matches_the_reference)
{
    tu_seed(2301);
    struct host_cl h = host_open();
    const int64_t sizes[][3] = {{7, 5, 3}, {1, 13, 9}, {33, 17, 20}, {65, 3, 31}};
    for (int with_queue = 0; with_queue < 2; with_queue++) {
        struct clops_pool *pool = host_pool(&h, with_queue, NULL);
        for (size_t s = 0; s < TU_COUNT(sizes); s++) {
            check_gemm_on_wrapped(&h, pool, CLOPS_F32, sizes[s][0], sizes[s][1], sizes[s][2]);
            if (device_has_fp64(h.device))
                check_gemm_on_wrapped(&h, pool, CLOPS_F64, sizes[s][0], sizes[s][1], sizes[s][2]);
        }
        api->pool_release(pool);
    }
    host_close(&h);
}
END_TEST

START_TEST(test_pool_from_cl_describes_the_host_device_and_releases_what_it_retained)
{
    struct host_cl h = host_open();
    const cl_uint refs = context_refs(h.context);
    struct clops_pool *pool = host_pool(&h, 1, "profiling = false;");
    ck_assert_uint_gt(context_refs(h.context), refs);
    ck_assert_int_eq(api->pool_device_count(pool), 1);
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(api->pool_device_info(pool, 0, &info), CLOPS_OK);
    char name[128] = "";
    clGetDeviceInfo(h.device, CL_DEVICE_NAME, sizeof name, name, NULL);
    ck_assert_str_eq(info.name, name);
    ck_assert_int_eq(info.queues, 1); /* the host's queue */
    /* A call on host memory: its programs, kernels and staging live on the host's context. */
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    struct clops_tensor tx = clops_matrix(x, CLOPS_F32, 2, 3, 3, 0);
    struct clops_tensor ty = clops_matrix(y, CLOPS_F32, 3, 2, 2, 0);
    const struct clops_arg args[] = {{.kind = CLOPS_PARAM_TENSOR_IN, .tensor = &tx},
                                     {.kind = CLOPS_PARAM_TENSOR_OUT, .tensor = &ty}};
    int32_t status = api->invoke_sized(pool, api->op_find("transpose"), args, 2, sizeof args[0]);
    ck_assert_msg(status == CLOPS_OK, "%s", api->last_error());
    ck_assert(y[0] == 1 && y[1] == 4 && y[4] == 3 && y[5] == 6);
    api->pool_release(pool);
    /* Everything retained (context, queue, and what the programs hold of it) is released, once
     * what the pool enqueued last on the host's queue (unmapping its pinned blocks) has run. */
    ck_assert_int_eq(clFinish(h.queue), CL_SUCCESS);
    AWAIT_COUNT(context_refs(h.context), refs);
    ck_assert_uint_eq(context_refs(h.context), refs);
    AWAIT_COUNT(queue_refs(h.queue), 1);
    ck_assert_uint_eq(queue_refs(h.queue), 1);
    host_close(&h);
}
END_TEST

START_TEST(test_buffer_cl_hands_out_the_mem_and_context_without_retaining)
{
    struct host_cl h = host_open();
    struct clops_pool *pool = host_pool(&h, 1, NULL);
    cl_mem mem = host_buffer(&h, 256, NULL);
    struct clops_buffer *wrapped = wrap(pool, mem);
    ck_assert_uint_eq(mem_refs(mem), 2); /* the host's and the wrap's */
    struct clops_buffer_cl_args a = {.struct_size = sizeof a, .buffer = wrapped, .device = -1};
    ck_assert_int_eq(api->buffer_cl(&a), CLOPS_OK);
    ck_assert_ptr_eq(a.cl_mem, mem);
    ck_assert_ptr_eq(a.cl_context, h.context);
    ck_assert_int_eq(a.device, 0);
    ck_assert_uint_eq(mem_refs(mem), 2);
    ck_assert_int_eq(api->buffer_size(wrapped), 256);
    /* A buffer of clops' own: a cl_mem of the host's context, of its size. */
    struct clops_buffer *own = NULL;
    ck_assert_int_eq(api->buffer_create(pool, 1000, &own), CLOPS_OK);
    a.buffer = own;
    ck_assert_int_eq(api->buffer_cl(&a), CLOPS_OK);
    size_t size = 0;
    cl_context context = NULL;
    clGetMemObjectInfo(a.cl_mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    clGetMemObjectInfo(a.cl_mem, CL_MEM_CONTEXT, sizeof context, &context, NULL);
    ck_assert_uint_eq(size, 1000);
    ck_assert_ptr_eq(context, h.context);
    ck_assert_ptr_eq(a.cl_context, h.context);
    /* The host writes clops' buffer itself; clops reads what it wrote. */
    const char text[] = "written by the host";
    ck_assert_int_eq(
        clEnqueueWriteBuffer(h.queue, a.cl_mem, CL_TRUE, 100, sizeof text, text, 0, NULL, NULL),
        CL_SUCCESS);
    char back[sizeof text] = "";
    ck_assert_int_eq(api->buffer_download(own, 100, back, sizeof back), CLOPS_OK);
    ck_assert_str_eq(back, text);
    api->buffer_release(own);
    api->buffer_release(wrapped);
    ck_assert_uint_eq(mem_refs(mem), 1);
    api->pool_release(pool);
    clReleaseMemObject(mem);
    host_close(&h);
}
END_TEST

/* ---- Memory statistics ------------------------------------------------------------------------
 */

static struct clops_memory_stats_args memory_now(struct clops_pool *pool)
{
    struct clops_memory_stats_args s = {.struct_size = sizeof s, .pool = pool};
    ck_assert_msg(api->memory_stats(&s) == CLOPS_OK, "%s", api->last_error());
    return s;
}

START_TEST(test_memory_stats_count_created_buffers_exactly_and_not_wrapped_ones)
{
    tu_seed(2302);
    struct host_cl h = host_open();
    struct clops_pool *pool = host_pool(&h, 1, "device_memory_percent = 50;");
    cl_ulong global = 0;
    clGetDeviceInfo(h.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    const struct clops_memory_stats_args before = memory_now(pool);
    const int64_t g = (int64_t)global;
    ck_assert_int_eq(before.limit_bytes, g / 100 * 50 + g % 100 * 50 / 100);
    ck_assert_int_ge(before.peak_bytes, before.allocated_bytes);
    /* Awkward sizes: the count is the bytes asked, not a rounding of them. */
    const int64_t bytes1 = 1000 + (int64_t)(tu_uniform() * 500 + 500), bytes2 = 4099;
    struct clops_buffer *b1 = NULL, *b2 = NULL;
    ck_assert_int_eq(api->buffer_create(pool, bytes1, &b1), CLOPS_OK);
    ck_assert_int_eq(api->buffer_create(pool, bytes2, &b2), CLOPS_OK);
    struct clops_memory_stats_args s = memory_now(pool);
    ck_assert_int_eq(s.allocated_bytes, before.allocated_bytes + bytes1 + bytes2);
    ck_assert_int_eq(s.buffers, before.buffers + 2);
    ck_assert_int_ge(s.peak_bytes, s.allocated_bytes);
    const int64_t peak = s.peak_bytes;
    /* The host's buffer is not clops' memory. */
    cl_mem mem = host_buffer(&h, 1 << 16, NULL);
    struct clops_buffer *wrapped = wrap(pool, mem);
    s = memory_now(pool);
    ck_assert_int_eq(s.allocated_bytes, before.allocated_bytes + bytes1 + bytes2);
    ck_assert_int_eq(s.buffers, before.buffers + 2);
    api->buffer_release(wrapped);
    api->buffer_release(b1);
    s = memory_now(pool);
    ck_assert_int_eq(s.allocated_bytes, before.allocated_bytes + bytes2);
    ck_assert_int_eq(s.buffers, before.buffers + 1);
    api->buffer_release(b2);
    s = memory_now(pool);
    ck_assert_int_eq(s.allocated_bytes, before.allocated_bytes);
    ck_assert_int_eq(s.buffers, before.buffers);
    ck_assert_int_eq(s.peak_bytes, peak); /* the peak stays */
    ck_assert_int_eq(s.limit_bytes, before.limit_bytes);
    /* Process-wide, as the limit: a second pool on the same device sees the first's buffers. */
    struct clops_pool *other = host_pool(&h, 0, NULL);
    ck_assert_int_eq(api->buffer_create(pool, bytes1, &b1), CLOPS_OK);
    ck_assert_int_eq(memory_now(other).allocated_bytes, before.allocated_bytes + bytes1);
    ck_assert_int_eq(memory_now(other).buffers, before.buffers + 1);
    api->buffer_release(b1);
    api->pool_release(other);
    api->pool_release(pool);
    clReleaseMemObject(mem);
    host_close(&h);
}
END_TEST

/* ---- Refusals ---------------------------------------------------------------------------------
 */

START_TEST(test_pool_from_cl_refuses_bad_arguments_naming_them)
{
    struct host_cl h = host_open();
    cl_int rc;
    cl_context other = clCreateContext(NULL, 1, &h.device, NULL, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    cl_command_queue foreign = clCreateCommandQueue(other, h.device, 0, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    cl_command_queue unordered =
        clCreateCommandQueue(h.context, h.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &rc);
    if (rc != CL_SUCCESS)
        unordered = NULL; /* a driver without out-of-order queues: that case is skipped */
    const cl_uint refs = context_refs(h.context);
    int not_a_device = 0;
    void *dev1[1] = {h.device}, *dev2[2] = {h.device, h.device}, *bogus[1] = {&not_a_device};
    void *null_dev[1] = {NULL}, *q_null[1] = {NULL}, *q_foreign[1] = {foreign};
    void *q_unordered[1] = {unordered}, *q_plain[1] = {h.queue};
    const struct clops_pool_from_cl_args good = {
        .struct_size = sizeof good, .device_count = 1, .cl_context = h.context, .cl_devices = dev1};
    struct {
        struct clops_pool_from_cl_args a;
        int32_t status;
        const char *needle;
    } cases[] = {
        {{.struct_size = 4}, CLOPS_ERR_ABI_MISMATCH, "struct_size = 4"},
        {{.struct_size = sizeof good, .device_count = 1, .cl_devices = dev1},
         CLOPS_ERR_INVALID_ARGUMENT,
         "parameter 'cl_context' is NULL"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "parameter 'device_count' = 0"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "parameter 'device_count' = -3"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "parameter 'cl_devices' is NULL"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "parameter 'cl_devices[0]' is NULL"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "'cl_devices[0]' is not a device of 'cl_context'"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "'cl_devices[1]' repeats cl_devices[0]"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "parameter 'cl_queues[0]' is NULL"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "'cl_queues[0]' is a queue of another context"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "'cl_queues[0]' is out of order"},
        {good, CLOPS_ERR_INVALID_ARGUMENT, "'cl_queues[0]' does not profile"},
        {good, CLOPS_ERR_CONFIG, "<string>:2: devices: refused by pool_create_from_cl"},
        {good, CLOPS_ERR_CONFIG, "<string>:1:"},
        {good, CLOPS_ERR_CONFIG, "device_memory_percent"},
    };
    cases[2].a.device_count = 0;
    cases[3].a.device_count = -3;
    cases[4].a.cl_devices = NULL;
    cases[5].a.cl_devices = null_dev;
    cases[6].a.cl_devices = bogus;
    cases[7].a.cl_devices = dev2;
    cases[7].a.device_count = 2;
    cases[8].a.cl_queues = q_null;
    cases[9].a.cl_queues = q_foreign;
    cases[10].a.cl_queues = q_unordered;
    cases[11].a.cl_queues = q_plain;
    cases[11].a.config_text = "kernel_times = true;";
    cases[12].a.config_text = "profiling = false;\ndevices = ( { type = \"cpu\"; } );";
    cases[13].a.config_text = "profiling = ;";
    cases[14].a.config_text = "device_memory_percent = 0;";
    for (size_t i = 0; i < TU_COUNT(cases); i++) {
        if (i == 10 && unordered == NULL)
            continue;
        cases[i].a.pool = (struct clops_pool *)&not_a_device; /* must come back NULL */
        int32_t got = api->pool_create_from_cl(&cases[i].a);
        expect_refusal((int)i, got, cases[i].status, cases[i].needle);
        if (cases[i].a.struct_size >= sizeof good)
            ck_assert_ptr_null(cases[i].a.pool);
    }
    expect_refusal(99, api->pool_create_from_cl(NULL), CLOPS_ERR_INVALID_ARGUMENT,
                   "pool_create_from_cl: parameter 'args' is NULL");
    /* A refused call retained nothing. */
    ck_assert_uint_eq(context_refs(h.context), refs);
    if (unordered != NULL)
        clReleaseCommandQueue(unordered);
    clReleaseCommandQueue(foreign);
    clReleaseContext(other);
    host_close(&h);
}
END_TEST

START_TEST(test_wrap_getter_and_stats_refuse_bad_arguments_naming_them)
{
    struct host_cl h = host_open();
    struct clops_pool *pool = host_pool(&h, 1, NULL);
    cl_int rc;
    cl_context other = clCreateContext(NULL, 1, &h.device, NULL, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    cl_mem mine = host_buffer(&h, 64, NULL);
    cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, 64, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    struct clops_buffer_wrap_args w = {.struct_size = sizeof w, .pool = pool, .cl_mem = foreign};
    expect_refusal(0, api->buffer_wrap_cl(&w), CLOPS_ERR_INVALID_ARGUMENT,
                   "buffer_wrap_cl: parameter 'cl_mem' is a buffer of another cl_context");
    ck_assert_ptr_null(w.buffer);
    ck_assert_uint_eq(mem_refs(foreign), 1);
    w.cl_mem = NULL;
    expect_refusal(1, api->buffer_wrap_cl(&w), CLOPS_ERR_INVALID_ARGUMENT, "'cl_mem' is NULL");
    w.cl_mem = mine;
    w.pool = NULL;
    expect_refusal(2, api->buffer_wrap_cl(&w), CLOPS_ERR_INVALID_ARGUMENT, "'pool' is NULL");
    w.pool = pool;
    w.device = 1;
    expect_refusal(3, api->buffer_wrap_cl(&w), CLOPS_ERR_NOT_FOUND,
                   "parameter 'device' = 1; the pool has 1 device(s)");
    w.device = 0;
    w.struct_size = 8;
    expect_refusal(4, api->buffer_wrap_cl(&w), CLOPS_ERR_ABI_MISMATCH, "struct_size = 8");
    ck_assert_uint_eq(mem_refs(mine), 1);
    /* A pool of clops' own context cannot wrap the host's buffer. */
    struct clops_pool *own = NULL;
    ck_assert_int_eq(api->pool_create_default(&own), CLOPS_OK);
    w = (struct clops_buffer_wrap_args){.struct_size = sizeof w, .pool = own, .cl_mem = mine};
    expect_refusal(5, api->buffer_wrap_cl(&w), CLOPS_ERR_INVALID_ARGUMENT,
                   "another cl_context than the pool's device 0");
    api->pool_release(own);

    struct clops_buffer_cl_args g = {.struct_size = sizeof g};
    expect_refusal(6, api->buffer_cl(&g), CLOPS_ERR_INVALID_ARGUMENT,
                   "buffer_cl: parameter 'buffer' is NULL");
    expect_refusal(7, api->buffer_cl(NULL), CLOPS_ERR_INVALID_ARGUMENT, "'args' is NULL");
    struct clops_memory_stats_args s = {.struct_size = sizeof s, .pool = pool, .device = 2};
    expect_refusal(8, api->memory_stats(&s), CLOPS_ERR_NOT_FOUND,
                   "memory_stats: parameter 'device' = 2");
    s.pool = NULL;
    expect_refusal(9, api->memory_stats(&s), CLOPS_ERR_INVALID_ARGUMENT, "'pool' is NULL");
    s.struct_size = 16;
    expect_refusal(10, api->memory_stats(&s), CLOPS_ERR_ABI_MISMATCH, "struct_size = 16");
    clReleaseMemObject(foreign);
    clReleaseMemObject(mine);
    clReleaseContext(other);
    api->pool_release(pool);
    host_close(&h);
}
END_TEST

/* ---- The buffer copy's internals (what a stream's buffer_copy runs) ---------------------------
 */

START_TEST(test_buffer_copy_enqueues_the_bytes_and_refuses_bad_ranges)
{
    tu_seed(2303);
    struct host_cl h = host_open();
    struct clops_pool *pool = host_pool(&h, 1, NULL);
    enum { N = 1000 };
    unsigned char *data = tu_random_bytes(N), back[N];
    struct clops_buffer *src = NULL, *dst = NULL;
    ck_assert_int_eq(api->buffer_create(pool, N, &src), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(src, 0, data, N), CLOPS_OK);
    cl_mem host_mem = host_buffer(&h, N, NULL);
    dst = wrap(pool, host_mem);
    /* Awkward offsets, from clops' buffer into the host's, then within one buffer, disjoint. */
    ck_assert_int_eq(buffer_copy_check(src, 13, dst, 301, 677, NULL, NULL, "buffer_copy"),
                     CLOPS_OK);
    cl_event done = NULL;
    ck_assert_int_eq(
        buffer_copy_enqueue(h.queue, src, 13, dst, 301, 677, 0, NULL, &done, "buffer_copy"),
        CLOPS_OK);
    ck_assert_ptr_nonnull(done);
    ck_assert_int_eq(buffer_copy_check(dst, 301, dst, 0, 300, NULL, NULL, "buffer_copy"), CLOPS_OK);
    ck_assert_int_eq(
        buffer_copy_enqueue(h.queue, dst, 301, dst, 0, 300, 1, &done, NULL, "buffer_copy"),
        CLOPS_OK);
    ck_assert_int_eq(clFinish(h.queue), CL_SUCCESS);
    clReleaseEvent(done);
    ck_assert_int_eq(api->buffer_download(dst, 0, back, N), CLOPS_OK);
    ck_assert_mem_eq(back + 301, data + 13, 677);
    ck_assert_mem_eq(back, data + 13, 300);
    /* 0 bytes: a marker, with an event all the same. */
    ck_assert_int_eq(buffer_copy_check(src, N, dst, N, 0, NULL, NULL, "buffer_copy"), CLOPS_OK);
    ck_assert_int_eq(buffer_copy_enqueue(h.queue, src, N, dst, N, 0, 0, NULL, &done, "buffer_copy"),
                     CLOPS_OK);
    ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    clReleaseEvent(done);

    struct clops_pool *other = host_pool(&h, 0, NULL);
    struct clops_buffer *elsewhere = NULL;
    ck_assert_int_eq(api->buffer_create(other, 64, &elsewhere), CLOPS_OK);
    const struct {
        const struct clops_buffer *src;
        int64_t src_offset;
        const struct clops_buffer *dst;
        int64_t dst_offset, bytes;
        const char *needle;
    } cases[] = {
        {NULL, 0, dst, 0, 1, "parameter 'src' is NULL"},
        {src, 0, NULL, 0, 1, "parameter 'dst' is NULL"},
        {src, 0, dst, 0, -1, "parameter 'bytes' = -1"},
        {src, -1, dst, 0, 1, "parameter 'src_offset' = -1"},
        {src, 990, dst, 0, 11, "parameter 'src_offset' = 990 with bytes = 11"},
        {src, 0, dst, 1001, 0, "parameter 'dst_offset' = 1001"},
        {src, 0, src, 499, 500, "parameter 'dst' range [499, 999) overlaps 'src' range [0, 500)"},
        {dst, 500, dst, 1, 500, "overlaps"},
        {src, 0, elsewhere, 0, 8, "parameter 'dst' is a buffer of another pool than 'src'"},
    };
    for (size_t i = 0; i < TU_COUNT(cases); i++) {
        int32_t got =
            buffer_copy_check(cases[i].src, cases[i].src_offset, cases[i].dst, cases[i].dst_offset,
                              cases[i].bytes, NULL, NULL, "buffer_copy");
        expect_refusal((int)i, got, CLOPS_ERR_INVALID_ARGUMENT, cases[i].needle);
        ck_assert_msg(strncmp(api->last_error(), "buffer_copy: ", 13) == 0, "%s",
                      api->last_error());
    }
    /* Two wraps of one cl_mem are one memory. */
    struct clops_buffer *again = wrap(pool, host_mem);
    expect_refusal(20, buffer_copy_check(dst, 0, again, 10, 20, NULL, NULL, "buffer_copy"),
                   CLOPS_ERR_INVALID_ARGUMENT, "overlaps");
    api->buffer_release(again);
    api->buffer_release(elsewhere);
    api->pool_release(other);
    api->buffer_release(src);
    api->buffer_release(dst);
    api->pool_release(pool);
    clReleaseMemObject(host_mem);
    free(data);
    host_close(&h);
}
END_TEST

/* ---- buffer_copy through the table, on a stream of the host's queue -------------------------- */

static struct clops_event *submit_copy(struct clops_stream *stream, struct clops_buffer *src,
                                       int64_t src_offset, struct clops_buffer *dst,
                                       int64_t dst_offset, int64_t bytes)
{
    struct clops_buffer_copy_args c = {.struct_size = sizeof c,
                                       .stream = stream,
                                       .src = src,
                                       .src_offset = src_offset,
                                       .dst = dst,
                                       .dst_offset = dst_offset,
                                       .bytes = bytes};
    ck_assert_msg(api->buffer_copy(&c) == CLOPS_OK, "%s", api->last_error());
    ck_assert_ptr_nonnull(c.event);
    return c.event;
}

static void expect_complete(struct clops_event *e)
{
    struct clops_event_query_args q = {.struct_size = sizeof q, .event = e};
    ck_assert_int_eq(api->event_query(&q), CLOPS_OK);
    ck_assert_msg(q.state == CLOPS_EVENT_COMPLETE && q.status == CLOPS_OK, "state %d: %s",
                  (int)q.state, q.message);
}

START_TEST(test_buffer_copies_on_a_stream_of_the_host_queue_run_in_order)
{
    tu_seed(2305);
    struct host_cl h = host_open();
    struct clops_pool *pool = host_pool(&h, 1, NULL);
    struct clops_stream_create_args sc = {
        .struct_size = sizeof sc, .pool = pool, .cl_queue = h.queue};
    ck_assert_msg(api->stream_create(&sc) == CLOPS_OK, "%s", api->last_error());
    enum { N = 1000 };
    unsigned char *data = tu_random_bytes(N), back[N];
    struct clops_buffer *src = NULL, *mid = NULL;
    ck_assert_int_eq(api->buffer_create(pool, N, &src), CLOPS_OK);
    ck_assert_int_eq(api->buffer_create(pool, N, &mid), CLOPS_OK);
    ck_assert_int_eq(api->buffer_upload(src, 0, data, N), CLOPS_OK);
    cl_mem host_mem = host_buffer(&h, N, NULL);
    struct clops_buffer *dst = wrap(pool, host_mem);
    /* The second copy reads what the first wrote: the stream's order alone makes it right. */
    struct clops_event *first = submit_copy(sc.stream, src, 7, mid, 50, 900);
    struct clops_event *second = submit_copy(sc.stream, mid, 50, dst, 3, 900);
    struct clops_event *events[2] = {first, second};
    struct clops_event_wait_args w = {
        .struct_size = sizeof w, .count = 2, .events = events, .timeout_ns = -1, .wait_all = 1};
    ck_assert_int_eq(api->event_wait(&w), CLOPS_OK);
    expect_complete(first);
    expect_complete(second);
    ck_assert_int_eq(clEnqueueReadBuffer(h.queue, host_mem, CL_TRUE, 0, N, back, 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_mem_eq(back + 3, data + 7, 900);

    /* Refused at once, nothing queued, no event. */
    struct clops_buffer_copy_args c = {.struct_size = sizeof c,
                                       .stream = sc.stream,
                                       .src = mid,
                                       .src_offset = 0,
                                       .dst = mid,
                                       .dst_offset = 10,
                                       .bytes = 20};
    expect_refusal(0, api->buffer_copy(&c), CLOPS_ERR_INVALID_ARGUMENT,
                   "buffer_copy: parameter 'dst' range [10, 30) overlaps 'src' range [0, 20)");
    ck_assert_ptr_null(c.event);
    c.stream = NULL;
    expect_refusal(1, api->buffer_copy(&c), CLOPS_ERR_INVALID_ARGUMENT,
                   "buffer_copy: parameter 'stream' is NULL");
    c.struct_size = 8;
    expect_refusal(2, api->buffer_copy(&c), CLOPS_ERR_ABI_MISMATCH, "struct_size = 8");
    /* A buffer of another pool, on the stream of this one. */
    struct clops_pool *other = host_pool(&h, 0, NULL);
    struct clops_buffer *elsewhere = NULL;
    ck_assert_int_eq(api->buffer_create(other, N, &elsewhere), CLOPS_OK);
    c = (struct clops_buffer_copy_args){.struct_size = sizeof c,
                                        .stream = sc.stream,
                                        .src = elsewhere,
                                        .dst = elsewhere,
                                        .dst_offset = 500,
                                        .bytes = 10};
    expect_refusal(3, api->buffer_copy(&c), CLOPS_ERR_INVALID_ARGUMENT,
                   "parameter 'src' is a buffer of another pool than the stream's");
    api->buffer_release(elsewhere);
    api->pool_release(other);

    struct clops_event_release_args r = {.struct_size = sizeof r, .event = first};
    api->event_release(&r);
    r.event = second;
    api->event_release(&r);
    struct clops_stream_release_args sr = {.struct_size = sizeof sr, .stream = sc.stream};
    ck_assert_int_eq(api->stream_release(&sr), CLOPS_OK);
    api->buffer_release(src);
    api->buffer_release(mid);
    api->buffer_release(dst);
    api->pool_release(pool);
    AWAIT_COUNT(mem_refs(host_mem), 1);
    ck_assert_uint_eq(mem_refs(host_mem), 1);
    clReleaseMemObject(host_mem);
    free(data);
    host_close(&h);
}
END_TEST

int main(void)
{
    api = entry_table(CLOPS_ABI_MAJOR);
    const struct tu_test tests[] = {
        TU_TEST(test_gemm_on_wrapped_host_buffers_matches_the_reference),
        TU_TEST(test_pool_from_cl_describes_the_host_device_and_releases_what_it_retained),
        TU_TEST(test_buffer_cl_hands_out_the_mem_and_context_without_retaining),
        TU_TEST(test_memory_stats_count_created_buffers_exactly_and_not_wrapped_ones),
        TU_TEST(test_pool_from_cl_refuses_bad_arguments_naming_them),
        TU_TEST(test_wrap_getter_and_stats_refuse_bad_arguments_naming_them),
        TU_TEST(test_buffer_copy_enqueues_the_bytes_and_refuses_bad_ranges),
        TU_TEST(test_buffer_copies_on_a_stream_of_the_host_queue_run_in_order),
    };
    return tu_run_tests("interop", 600, 1, tests, TU_COUNT(tests));
}
