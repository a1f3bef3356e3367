/* test_memory.c — device memory accounting: buffers and operator staging past what a device
 * reports are refused with CLOPS_ERR_OUT_OF_DEVICE_MEMORY instead of reaching a lazy driver
 * (PoCL) that would abort the process at first use; what is held stays usable, and threads or
 * pools together cannot pass the limit. PoCL allocates lazily: creating buffers costs nothing
 * until they are written, and these tests write only a few kilobytes of them. */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

enum { HELD_MAX = 256, DEFAULT_PERCENT = 90 };

/* Buffers a test holds on one device. */
struct held {
    struct clops_buffer *buffers[HELD_MAX];
    int64_t bytes[HELD_MAX];
    int count;
    int64_t total;
};

static struct clops_device_info primary_info(struct clops_pool *pool)
{
    struct clops_device_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(tu_api()->pool_device_info(pool, 0, &info), CLOPS_OK);
    ck_assert_int_gt(info.global_mem_bytes, 0);
    return info;
}

/* The documented limit: `percent` of what the device reports. */
static int64_t limit_for(int64_t global_mem_bytes, int32_t percent)
{
    return global_mem_bytes / 100 * percent + global_mem_bytes % 100 * percent / 100;
}

/* The largest power of two <= n (n >= 1). */
static int64_t pow2_floor(int64_t n)
{
    int64_t p = 1;
    while (p <= n / 2)
        p *= 2;
    return p;
}

static void hold(struct held *h, struct clops_buffer *b, int64_t bytes)
{
    ck_assert_int_lt(h->count, HELD_MAX);
    h->buffers[h->count] = b;
    h->bytes[h->count] = bytes;
    h->count++;
    h->total += bytes;
}

static void release_all(struct held *h)
{
    for (int i = 0; i < h->count; i++)
        tu_api()->buffer_release(h->buffers[i]);
    memset(h, 0, sizeof *h);
}

/* Creates buffers of `size` bytes, halving the size after each refusal down to one byte, until
 * the device refuses a single byte or `cap` bytes are held. Below the cap, the device's room is
 * then exactly used up: h->total plus what was held before is its limit. Every refusal must be
 * CLOPS_ERR_OUT_OF_DEVICE_MEMORY, leaving *out NULL. */
static void fill_device(struct clops_pool *pool, int64_t size, int64_t cap, struct held *h)
{
    while (size >= 1 && h->total < cap) {
        struct clops_buffer *b = (struct clops_buffer *)&b; /* not NULL: must be cleared */
        int32_t status = tu_api()->buffer_create(pool, size, &b);
        if (status == CLOPS_OK) {
            hold(h, b, size);
            continue;
        }
        ck_assert_msg(status == CLOPS_ERR_OUT_OF_DEVICE_MEMORY, "buffer_create(%" PRId64 "): %s",
                      size, tu_api()->last_error());
        ck_assert_ptr_null(b);
        size /= 2;
    }
}

/* A few bytes at the start and at the end of `b` go and come back. */
static void check_round_trip(struct clops_buffer *b, int64_t bytes, unsigned char seed)
{
    const struct clops_api *api = tu_api();
    unsigned char in[64], out[64];
    int64_t n = bytes < (int64_t)sizeof in ? bytes : (int64_t)sizeof in;
    for (int i = 0; i < (int)sizeof in; i++)
        in[i] = (unsigned char)(seed + 31 * i);
    const int64_t offsets[2] = {0, bytes - n};
    for (int k = 0; k < 2; k++) {
        memset(out, 0, sizeof out);
        ck_assert_int_eq(api->buffer_upload(b, offsets[k], in, n), CLOPS_OK);
        ck_assert_int_eq(api->buffer_download(b, offsets[k], out, n), CLOPS_OK);
        ck_assert(memcmp(in, out, (size_t)n) == 0);
    }
}

static void assert_message_has(const char *needle)
{
    const char *message = tu_api()->last_error();
    ck_assert_msg(strstr(message, needle) != NULL, "\"%s\" not in: %s", needle, message);
}

static void assert_message_has_number(const char *fmt, int64_t value)
{
    char needle[96];
    snprintf(needle, sizeof needle, fmt, value);
    assert_message_has(needle);
}

/* The device's limit is exactly used up: fills it from empty and checks the total. */
static void fill_to_limit(struct clops_pool *pool, const struct clops_device_info *info,
                          int32_t percent, struct held *h)
{
    const int64_t global = info->global_mem_bytes;
    fill_device(pool, pow2_floor(global / 8), 2 * global, h);
    ck_assert_msg(h->total <= global,
                  "buffer_create accepted %" PRId64 " bytes in %d buffers on '%s', which reports "
                  "%" PRId64 " bytes of memory",
                  h->total, h->count, info->name, global);
    ck_assert_int_eq(h->total, limit_for(global, percent));
}

/* The device's whole limit is there to take (fill_to_limit), and is given back. */
static void expect_limit_free(struct clops_pool *pool, const struct clops_device_info *info,
                              int32_t percent)
{
    struct held h = {0};
    fill_to_limit(pool, info, percent, &h);
    release_all(&h);
}

START_TEST(test_buffers_past_the_device_memory_limit_are_refused)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_new_pool();
    const struct clops_device_info info = primary_info(pool);
    const int64_t limit = limit_for(info.global_mem_bytes, DEFAULT_PERCENT);
    const int64_t chunk = pow2_floor(info.global_mem_bytes / 8);
    struct held h = {0};
    fill_to_limit(pool, &info, DEFAULT_PERCENT, &h);

    struct clops_buffer *b = NULL;
    ck_assert_int_eq(api->buffer_create(pool, chunk, &b), CLOPS_ERR_OUT_OF_DEVICE_MEMORY);
    ck_assert_ptr_null(b);
    assert_message_has("buffer_create");
    assert_message_has(info.name);
    assert_message_has_number(" %" PRId64 " bytes", chunk);
    assert_message_has_number("%" PRId64 " bytes in use", limit);
    assert_message_has_number("limit %" PRId64 " bytes", limit);

    /* What was accepted stays usable. */
    check_round_trip(h.buffers[0], h.bytes[0], 1);
    check_round_trip(h.buffers[h.count - 1], h.bytes[h.count - 1], 2);

    /* Freeing one gives its bytes back, and no more. */
    api->buffer_release(h.buffers[0]);
    h.buffers[0] = NULL;
    ck_assert_int_eq(api->buffer_create(pool, h.bytes[0], &h.buffers[0]), CLOPS_OK);
    check_round_trip(h.buffers[0], h.bytes[0], 3);
    ck_assert_int_eq(api->buffer_create(pool, 1, &b), CLOPS_ERR_OUT_OF_DEVICE_MEMORY);

    /* All of it comes back once everything is released. */
    release_all(&h);
    expect_limit_free(pool, &info, DEFAULT_PERCENT);
    api->pool_release(pool);
}
END_TEST

START_TEST(test_device_memory_percent_sets_the_limit)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool_from_string("device_memory_percent = 37;");
    const struct clops_device_info info = primary_info(pool);
    expect_limit_free(pool, &info, 37);
    api->pool_release(pool);

    const char *bad[] = {"device_memory_percent = 0;", "device_memory_percent = 101;",
                         "device_memory_percent = \"90\";"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pool = NULL;
        ck_assert_int_eq(api->pool_create_from_string(bad[i], &pool), CLOPS_ERR_CONFIG);
        ck_assert_ptr_null(pool);
        assert_message_has("<string>:1: device_memory_percent: expected an integer in 1..100");
    }
}
END_TEST

/* C = A·B for n×n row-major f32, in double: the reference. */
static void reference_gemm(const float *a, const float *b, double *c, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += (double)a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
}

START_TEST(test_operator_staging_past_the_limit_fails_and_changes_nothing)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_new_pool();
    const struct clops_device_info info = primary_info(pool);
    struct held h = {0};
    fill_to_limit(pool, &info, DEFAULT_PERCENT, &h);

    /* Leave exactly `room` bytes: A (1 MiB) is staged, B (1 MiB) no longer fits. */
    const int n = 512;
    const int64_t matrix_bytes = (int64_t)n * n * (int64_t)sizeof(float);
    const int64_t room = matrix_bytes + matrix_bytes / 2;
    ck_assert_int_gt(h.bytes[0], room);
    api->buffer_release(h.buffers[0]);
    ck_assert_int_eq(api->buffer_create(pool, h.bytes[0] - room, &h.buffers[0]), CLOPS_OK);
    h.bytes[0] -= room;

    float *a = tu_malloc(sizeof(float) * (size_t)(n * n));
    float *b = tu_malloc(sizeof(float) * (size_t)(n * n));
    float *c = tu_malloc(sizeof(float) * (size_t)(n * n));
    float *c_before = tu_malloc(sizeof(float) * (size_t)(n * n));
    double *ref = tu_malloc(sizeof(double) * (size_t)(n * n));
    tu_seed(7);
    tu_fill_f32(a, (int64_t)n * n);
    tu_fill_f32(b, (int64_t)n * n);
    tu_fill_f32(c, (int64_t)n * n);
    memcpy(c_before, c, sizeof(float) * (size_t)(n * n));
    struct clops_tensor ta = clops_matrix(a, CLOPS_F32, n, n, n, 0);
    struct clops_tensor tb = clops_matrix(b, CLOPS_F32, n, n, n, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F32, n, n, n, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
    ck_assert_int_eq(gemm(pool, &ta, &tb, &tc, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0),
                     CLOPS_ERR_OUT_OF_DEVICE_MEMORY);
    assert_message_has("gemm: parameter 'b'");
    assert_message_has(info.name);
    assert_message_has_number("limit %" PRId64 " bytes", limit_for(info.global_mem_bytes, 90));
    ck_assert(memcmp(c, c_before, sizeof(float) * (size_t)(n * n)) == 0);

    /* The staged A was given back: the room is whole again, and a reduce over more than it
     * holds fails the same way, leaving its output alone. */
    struct clops_buffer *probe = NULL;
    ck_assert_int_eq(api->buffer_create(pool, room, &probe), CLOPS_OK);
    api->buffer_release(probe);
    float sum = -7.0f;
    struct clops_tensor x = clops_matrix(b, CLOPS_F32, n, n, n, 0);
    struct clops_tensor out = {
        .data = &sum, .dtype = CLOPS_F32, .rank = 1, .shape = {1}, .strides = {1}};
    clops_reduce_fn reduce = (clops_reduce_fn)api->op_find("reduce")->entry;
    ck_assert_int_eq(api->buffer_create(pool, room - matrix_bytes + 1, &probe), CLOPS_OK);
    ck_assert_int_eq(reduce(pool, &x, &out, 0, -1), CLOPS_ERR_OUT_OF_DEVICE_MEMORY);
    assert_message_has("parameter 'x'");
    ck_assert(sum == -7.0f);
    api->buffer_release(probe);

    /* With the buffers gone the pool works as before. */
    release_all(&h);
    ck_assert_int_eq(gemm(pool, &ta, &tb, &tc, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0), CLOPS_OK);
    reference_gemm(a, b, ref, n);
    for (int i = 0; i < n * n; i++)
        ck_assert_msg(fabs(c[i] - ref[i]) <= 1e-4 * n, "c[%d] = %g, expected %g", i, c[i], ref[i]);
    ck_assert_int_eq(reduce(pool, &x, &out, 0, -1), CLOPS_OK);
    double expected = 0;
    for (int i = 0; i < n * n; i++)
        expected += b[i];
    ck_assert_double_le(fabs(sum - expected), 1e-3 * n);
    free(a);
    free(b);
    free(c);
    free(c_before);
    free(ref);
    api->pool_release(pool);
}
END_TEST

/* PER_THREAD buffers of global/64: one thread alone could take the whole limit. */
enum { THREADS = 8, PER_THREAD = 64 };

struct allocator {
    struct clops_pool *pool;
    pthread_barrier_t *start;
    int64_t size;
    struct clops_buffer *buffers[PER_THREAD];
    int count;
    int32_t refusal; /* the status that stopped it, CLOPS_OK when it reached PER_THREAD */
};

static void *allocate_until_refused(void *arg)
{
    struct allocator *t = arg;
    pthread_barrier_wait(t->start);
    t->refusal = CLOPS_OK;
    while (t->count < PER_THREAD) {
        int32_t status = tu_api()->buffer_create(t->pool, t->size, &t->buffers[t->count]);
        if (status != CLOPS_OK) {
            t->refusal = status;
            break;
        }
        t->count++;
    }
    return NULL;
}

START_TEST(test_threads_allocating_at_once_cannot_pass_the_limit)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_new_pool();
    const struct clops_device_info info = primary_info(pool);
    const int64_t limit = limit_for(info.global_mem_bytes, DEFAULT_PERCENT);
    /* THREADS * PER_THREAD buffers of this size are eight times what the device reports. */
    const int64_t size = info.global_mem_bytes / 64;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    struct allocator threads[THREADS];
    pthread_t ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        threads[i] = (struct allocator){.pool = pool, .start = &start, .size = size};
        ck_assert_int_eq(pthread_create(&ids[i], NULL, allocate_until_refused, &threads[i]), 0);
    }
    int64_t total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ids[i], NULL);
        total += threads[i].count * size;
    }
    pthread_barrier_destroy(&start);
    ck_assert_msg(total <= limit,
                  "%d threads were given %" PRId64 " bytes on '%s' (limit %" PRId64 ")", THREADS,
                  total, info.name, limit);
    /* Each stopped at a refusal, when less than one more buffer fitted. */
    ck_assert_int_gt(total, limit - size);
    for (int i = 0; i < THREADS; i++) {
        ck_assert_int_eq(threads[i].refusal, CLOPS_ERR_OUT_OF_DEVICE_MEMORY);
        for (int k = 0; k < threads[i].count; k++)
            api->buffer_release(threads[i].buffers[k]);
    }
    /* Everything came back. */
    expect_limit_free(pool, &info, DEFAULT_PERCENT);
    api->pool_release(pool);
}
END_TEST

START_TEST(test_pools_on_one_device_share_its_memory)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *first = tu_new_pool(), *second = tu_new_pool();
    const struct clops_device_info info = primary_info(first);
    struct held h = {0};
    fill_to_limit(first, &info, DEFAULT_PERCENT, &h);
    struct clops_buffer *b = NULL;
    ck_assert_int_eq(api->buffer_create(second, 1, &b), CLOPS_ERR_OUT_OF_DEVICE_MEMORY);
    ck_assert_ptr_null(b);
    release_all(&h);
    expect_limit_free(second, &info, DEFAULT_PERCENT);
    api->pool_release(second);
    api->pool_release(first);
}
END_TEST

/* Device memory clops holds on the pool's device 0 now, over every pool of the process. */
static int64_t allocated(struct clops_pool *pool)
{
    struct clops_memory_stats_args s = {.struct_size = sizeof s, .pool = pool, .device = 0};
    ck_assert_msg(tu_api()->memory_stats(&s) == CLOPS_OK, "%s", tu_api()->last_error());
    return s.allocated_bytes;
}

/* n x n f32 C = A B on host operands, checked against the host's product. */
static void gemm_on_host_operands(struct clops_pool *pool, int n, uint64_t seed)
{
    const size_t count = (size_t)n * (size_t)n;
    float *a = tu_malloc(sizeof(float) * count), *b = tu_malloc(sizeof(float) * count),
          *c = tu_malloc(sizeof(float) * count);
    double *ref = tu_malloc(sizeof(double) * count);
    tu_seed(seed);
    tu_fill_f32(a, (int64_t)count);
    tu_fill_f32(b, (int64_t)count);
    struct clops_tensor ta = clops_matrix(a, CLOPS_F32, n, n, n, 0),
                        tb = clops_matrix(b, CLOPS_F32, n, n, n, 0),
                        tc = clops_matrix(c, CLOPS_F32, n, n, n, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)tu_api()->op_find("gemm")->entry;
    ck_assert_msg(gemm(pool, &ta, &tb, &tc, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0) == CLOPS_OK,
                  "%s", tu_api()->last_error());
    reference_gemm(a, b, ref, n);
    for (size_t i = 0; i < count; i++)
        ck_assert_msg(fabs(c[i] - ref[i]) <= 1e-4 * (1 + fabs(ref[i])) * n,
                      "c[%zu] = %g, expected %g", i, (double)c[i], ref[i]);
    free(a);
    free(b);
    free(c);
    free(ref);
}

/* The buffers a pool keeps for later calls (its staged host operands) give way to another pool
 * on the same device as they do to its own calls: with the first pool keeping them, the second
 * still takes the whole limit, and the first then stages its operands again. */
START_TEST(test_kept_buffers_give_way_to_another_pool)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *first = tu_new_pool(), *second = tu_new_pool();
    const struct clops_device_info info = primary_info(first);
    const int64_t before = allocated(first);
    gemm_on_host_operands(first, 256, 31);
    ck_assert_int_gt(allocated(first), before); /* it keeps its operands' buffers */
    struct held h = {0};
    fill_to_limit(second, &info, DEFAULT_PERCENT, &h);
    ck_assert_int_eq(allocated(first), h.total);
    release_all(&h);
    gemm_on_host_operands(first, 256, 32);
    api->pool_release(second);
    api->pool_release(first);
}
END_TEST

/* A thread of test_pools_keeping_and_squeezing_at_once: its own pool's GEMMs on host operands
 * (which keep their buffers) between buffers of `big` bytes that leave no room for what the
 * other pool keeps. */
struct squeezer {
    struct clops_pool *pool;
    int64_t big;
    pthread_barrier_t *start;
    int wrong, errors; /* results off, and failures other than the limit's */
};

static void *squeeze(void *arg)
{
    struct squeezer *t = arg;
    enum { N = 48, ROUNDS = 12 };
    float a[N * N], b[N * N], c[N * N];
    double ref[N * N];
    for (int i = 0; i < N * N; i++) {
        a[i] = (float)((i * 7) % 13) - 6;
        b[i] = (float)((i * 5) % 11) - 5;
    }
    reference_gemm(a, b, ref, N);
    clops_gemm_fn gemm = (clops_gemm_fn)tu_api()->op_find("gemm")->entry;
    pthread_barrier_wait(t->start);
    for (int r = 0; r < ROUNDS; r++) {
        struct clops_tensor ta = clops_matrix(a, CLOPS_F32, N, N, N, 0),
                            tb = clops_matrix(b, CLOPS_F32, N, N, N, 0),
                            tc = clops_matrix(c, CLOPS_F32, N, N, N, 0);
        const int32_t status = gemm(t->pool, &ta, &tb, &tc, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1, 0);
        if (status != CLOPS_OK && status != CLOPS_ERR_OUT_OF_DEVICE_MEMORY)
            t->errors++;
        for (int i = 0; status == CLOPS_OK && i < N * N; i++)
            t->wrong += c[i] != (float)ref[i]; /* small integers: exact */
        struct clops_buffer *big = NULL;
        const int32_t made = tu_api()->buffer_create(t->pool, t->big, &big);
        if (made != CLOPS_OK && made != CLOPS_ERR_OUT_OF_DEVICE_MEMORY)
            t->errors++;
        if (big != NULL)
            tu_api()->buffer_release(big);
    }
    return NULL;
}

/* Two pools on one device, on two threads, each keeping its staged operands while the other's
 * buffers want the room (others_give_way releases a pool's kept buffers from the other's
 * thread): every product is right, nothing but the limit refuses, and the whole limit is free
 * afterwards. Under ThreadSanitizer in CI. */
START_TEST(test_pools_keeping_and_squeezing_at_once)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pools[2] = {tu_new_pool(), tu_new_pool()};
    const struct clops_device_info info = primary_info(pools[0]);
    const int64_t limit = limit_for(info.global_mem_bytes, DEFAULT_PERCENT);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    struct squeezer t[2];
    pthread_t ids[2];
    for (int i = 0; i < 2; i++) {
        t[i] = (struct squeezer){.pool = pools[i], .big = limit / 2 - 4096, .start = &start};
        ck_assert_int_eq(pthread_create(&ids[i], NULL, squeeze, &t[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(ids[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(t[i].wrong, 0);
        ck_assert_int_eq(t[i].errors, 0);
    }
    api->pool_release(pools[1]);
    expect_limit_free(pools[0], &info, DEFAULT_PERCENT);
    api->pool_release(pools[0]);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_TEST(test_buffers_past_the_device_memory_limit_are_refused),
        TU_TEST(test_device_memory_percent_sets_the_limit),
        TU_TEST(test_operator_staging_past_the_limit_fails_and_changes_nothing),
        TU_TEST(test_threads_allocating_at_once_cannot_pass_the_limit),
        TU_TEST(test_pools_on_one_device_share_its_memory),
        TU_TEST(test_kept_buffers_give_way_to_another_pool),
        TU_TEST(test_pools_keeping_and_squeezing_at_once),
    };
    return tu_run_tests("memory", 600, 1, tests, TU_COUNT(tests));
}
