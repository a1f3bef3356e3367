/* test_staging.c — host tensors moved through the pool's pinned blocks: an upload copies a view
 * in chunks through two staging blocks, whichever way the chunks fall (whole slices, runs of
 * rows, pieces of a row, one block for views that make no rectangle), into a device buffer laid
 * out as the view, and a download brings exactly the view's elements back; the statistics count
 * the view's bytes. The chunk size (tensor_stage_chunk) is lowered so that small views span many
 * chunks. Links the core: it stages tensors and reads the device buffer directly. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clops.h"
#include "config.h"
#include "entry.h"
#include "error.h"
#include "host_copy.h"
#include "platform.h"
#include "pool.h"
#include "pool_internal.h"
#include "tensor.h"
#include "testutil.h"

static struct clops_pool *pool;

static void open_pool(void)
{
    struct pool_config cfg;
    config_defaults(&cfg);
    ck_assert_msg(pool_create(&cfg, &pool) == CLOPS_OK, "pool_create: %s", err_last());
    tensor_stage_on_cpu = 1;
}

static void close_pool(void)
{
    tensor_stage_chunk = TENSOR_STAGE_CHUNK;
    tensor_stage_on_cpu = 0;
    host_copy_min_bytes = HOST_COPY_MIN_BYTES;
    host_copy_helpers = 0;
    pool_release(pool);
    pool = NULL;
}

/* A view of host memory and what it spans in bytes, padding included. */
struct view_case {
    const char *name;
    int32_t dtype, rank;
    int64_t shape[3], strides[3];
    int gathered; /* moved as its whole span, gaps included (no rectangle) */
};

static const struct view_case views[] = {
    {"dense vector", CLOPS_F32, 1, {3001}, {1}, 0},
    {"strided vector", CLOPS_F64, 1, {97}, {3}, 0},
    {"padded matrix", CLOPS_F64, 2, {37, 29}, {31, 1}, 0},
    {"column-major padded matrix", CLOPS_F32, 2, {23, 41}, {1, 26}, 0},
    {"padded slices", CLOPS_F32, 3, {5, 6, 7}, {70, 10, 1}, 0},
    /* A slice pitch that is no multiple of the row pitch: no rectangle. */
    {"no rectangle", CLOPS_F32, 3, {4, 6, 7}, {65, 10, 1}, 1},
};

static int64_t span_of(const struct view_case *v)
{
    int64_t last = 0;
    for (int32_t i = 0; i < v->rank; i++)
        last += (v->shape[i] - 1) * v->strides[i];
    return last + 1;
}

/* Element e (row-major over the shape) of the view: its offset in elements. */
static int64_t offset_of(const struct view_case *v, int64_t e)
{
    int64_t at = 0;
    for (int32_t i = v->rank - 1; i >= 0; i--) {
        at += e % v->shape[i] * v->strides[i];
        e /= v->shape[i];
    }
    return at;
}

static int64_t elements_of(const struct view_case *v)
{
    int64_t n = 1;
    for (int32_t i = 0; i < v->rank; i++)
        n *= v->shape[i];
    return n;
}

static int64_t bytes_uploaded(void)
{
    struct clops_stats s = {.struct_size = sizeof s};
    pool_read_stats(pool, &s);
    return s.bytes_uploaded;
}

/* Stages view `v` of random host memory, checks every element in the device buffer, then
 * overwrites the host elements, downloads and commits: the elements are back, the gaps as
 * they were. */
static void round_trip(const struct view_case *v, size_t chunk)
{
    tensor_stage_chunk = chunk;
    const int64_t es = dtype_size(v->dtype), span = span_of(v), n = elements_of(v);
    unsigned char *host = tu_random_bytes((size_t)(span * es));
    unsigned char *initial = malloc((size_t)(span * es));
    ck_assert_ptr_nonnull(initial);
    memcpy(initial, host, (size_t)(span * es));
    struct clops_tensor t = {.data = host, .dtype = v->dtype, .rank = v->rank};
    for (int32_t i = 0; i < v->rank; i++) {
        t.shape[i] = v->shape[i];
        t.strides[i] = v->strides[i];
    }
    struct pool_device *dev = pool_device_at(pool, 0);
    cl_command_queue queue = pool_acquire_queue(dev);
    struct staged_tensor st;
    const int64_t before = bytes_uploaded();
    ck_assert_msg(tensor_stage(pool, dev, queue, &t, 1, &st, "test", "x") == CLOPS_OK, "%s: %s",
                  v->name, err_last());
    ck_assert_int_eq(bytes_uploaded() - before, (v->gathered ? span : n) * es);

    size_t bytes = 0;
    ck_assert_int_eq(clGetMemObjectInfo(st.mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL),
                     CL_SUCCESS);
    ck_assert_uint_ge(bytes, (size_t)(span * es));
    unsigned char *device = malloc(bytes);
    ck_assert_ptr_nonnull(device);
    ck_assert_int_eq(clEnqueueReadBuffer(queue, st.mem, CL_TRUE, 0, bytes, device, 0, NULL, NULL),
                     CL_SUCCESS);
    for (int64_t e = 0; e < n; e++) {
        const int64_t at = offset_of(v, e) * es;
        ck_assert_msg(memcmp(device + at, host + at, (size_t)es) == 0,
                      "%s, chunk %zu: element %lld differs on the device", v->name, chunk,
                      (long long)e);
    }
    free(device);

    for (int64_t e = 0; e < n; e++)
        memset(host + offset_of(v, e) * es, 0x5A, (size_t)es);
    ck_assert_msg(tensor_download(pool, queue, &st, "test", "x") == CLOPS_OK, "%s: %s", v->name,
                  err_last());
    /* The download is only enqueued: a call waits for its queue once, before the commit. */
    ck_assert_int_eq(clFinish(queue), CL_SUCCESS);
    tensor_commit(&st);
    tensor_release(&st);
    ck_assert_msg(memcmp(host, initial, (size_t)(span * es)) == 0,
                  "%s, chunk %zu: host memory differs after the round trip", v->name, chunk);
    free(initial);
    free(host);
}

/* Chunks of 3 bytes (pieces of every row), 64 (a few rows), 1000 (rows, or whole slices),
 * 4096 and the default (the whole view in one chunk). */
static const size_t chunks[] = {3, 64, 1000, 4096, TENSOR_STAGE_CHUNK};

START_TEST(test_views_round_trip_through_chunks_of_any_size)
{
    tu_seed(7000 + (uint64_t)_i);
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
        round_trip(&views[_i], chunks[c]);
}
END_TEST

/* A CPU device's uploads skip the staging blocks (one write from the view): the same views. */
START_TEST(test_views_round_trip_in_one_write_on_a_cpu)
{
    tu_seed(7100 + (uint64_t)_i);
    tensor_stage_on_cpu = 0;
    round_trip(&views[_i], TENSOR_STAGE_CHUNK);
}
END_TEST

/* Host copies cut into parts on the pool's copier (5 helper threads, every copy of 2 bytes or
 * more in parts): the runs, rows and pieces of a run each part takes make up the whole view,
 * in both directions. */
START_TEST(test_views_round_trip_with_copies_in_parts)
{
    tu_seed(7200 + (uint64_t)_i);
    host_copy_min_bytes = 2;
    host_copy_helpers = 5;
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
        round_trip(&views[_i], chunks[c]);
}
END_TEST

/* Each part of a copy runs once, on the copier's threads or the caller; a second caller while
 * the copier is busy runs its parts itself; a copier without helpers, or none, too. */
struct part_count {
    _Atomic int runs[16];
    _Atomic int overlap; /* another caller's copy ran while this one was posted */
    struct host_copier *copier;
};

static void count_part(void *ctx, int part, int parts)
{
    struct part_count *pc = ctx;
    ck_assert_int_lt(part, parts);
    pc->runs[part]++;
    if (part == 0 && pc->copier != NULL) {
        /* A nested caller finds the copier busy: its parts run here, all of them. */
        struct part_count inner = {.copier = NULL};
        host_copier_run(pc->copier, count_part, &inner, 7);
        for (int p = 0; p < 7; p++)
            ck_assert_int_eq(inner.runs[p], 1);
        pc->overlap = 1;
    }
}

START_TEST(test_copier_runs_every_part_once)
{
    for (int helpers = 0; helpers <= 6; helpers += 3) {
        struct host_copier *c = host_copier_new(helpers);
        ck_assert_ptr_nonnull(c);
        for (int parts = 1; parts <= helpers + 1; parts++) {
            struct part_count pc = {.copier = c};
            host_copier_run(c, count_part, &pc, parts);
            for (int p = 0; p < 16; p++)
                ck_assert_int_eq(pc.runs[p], p < parts);
            ck_assert_int_eq(pc.overlap, 1);
        }
        host_copier_free(c);
    }
    struct part_count alone = {.copier = NULL};
    host_copier_run(NULL, count_part, &alone, 4);
    for (int p = 0; p < 16; p++)
        ck_assert_int_eq(alone.runs[p], p < 4);
    size_t begin, end, at = 0;
    for (int p = 0; p < 7; p++, at = end) {
        host_copy_share(1000003, p, 7, &begin, &end);
        ck_assert_uint_eq(begin, at);
        ck_assert_uint_ge(end - begin, 1000003 / 7);
    }
    ck_assert_uint_eq(at, 1000003);
}
END_TEST

/* A process fork()ed from one whose copier has threads has none of them: there a copy runs on
 * the caller alone, every part once, and freeing the copier returns instead of waiting for
 * threads that do not exist (an alarm turns a hang into a failure). */
START_TEST(test_copier_in_a_forked_child_copies_alone_and_returns)
{
    struct host_copier *c = host_copier_new(3);
    ck_assert_ptr_nonnull(c);
    struct part_count warm = {.copier = NULL};
    host_copier_run(c, count_part, &warm, 4);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        alarm(20);
        struct part_count alone = {.copier = NULL};
        host_copier_run(c, count_part, &alone, 4);
        int ok = 1;
        for (int p = 0; p < 16; p++)
            ok &= alone.runs[p] == (p < 4);
        host_copier_free(c);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child's copy or free failed or hung (status %d)", status);
    host_copier_free(c);
}
END_TEST

/* A block given back serves the next request that fits, and one held is not handed out again. */
START_TEST(test_host_blocks_are_reused_and_never_shared)
{
    struct pool_device *dev = pool_device_at(pool, 0);
    cl_command_queue queue = pool_acquire_queue(dev);
    size_t cap_a = 0, cap_b = 0, cap_c = 0;
    unsigned char *a = pool_host_take(pool, dev, queue, 100000, &cap_a);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_ge(cap_a, 100000);
    memset(a, 1, cap_a);
    unsigned char *b = pool_host_take(pool, dev, queue, 1000, &cap_b);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_ge(cap_b, 1000);
    ck_assert_ptr_ne(a, b);
    memset(b, 2, cap_b);
    pool_host_give(pool, a, cap_a);
    unsigned char *c = pool_host_take(pool, dev, queue, 50000, &cap_c);
    ck_assert_ptr_eq(c, a);
    ck_assert_uint_eq(cap_c, cap_a);
    ck_assert_uint_eq(b[cap_b - 1], 2);
    pool_host_give(pool, b, cap_b);
    pool_host_give(pool, c, cap_c);
}
END_TEST

/* A block larger than POOL_HOST_CACHE_BYTES is kept for the next call where the machine's memory
 * allows (an eighth of it): pinning a 16384^2 GEMM's output again on every call cost an H200 more
 * than the product. Where the machine has less, it goes back to the system. Kept or not is seen
 * in its bytes: a new block of that size is fresh memory from the system, zeroed. */
START_TEST(test_a_large_host_block_is_kept_where_memory_allows)
{
    struct pool_device *dev = pool_device_at(pool, 0);
    cl_command_queue queue = pool_acquire_queue(dev);
    const size_t bytes = POOL_HOST_CACHE_BYTES + ((size_t)64 << 20);
    size_t cap = 0, cap_again = 0;
    unsigned char *block = pool_host_take(pool, dev, queue, bytes, &cap);
    ck_assert_ptr_nonnull(block);
    block[0] = 0xa5;
    block[bytes - 1] = 0x5a;
    pool_host_give(pool, block, cap);
    unsigned char *again = pool_host_take(pool, dev, queue, bytes, &cap_again);
    ck_assert_ptr_nonnull(again);
    const int kept = again == block && again[0] == 0xa5 && again[bytes - 1] == 0x5a;
    const int room = os_physical_bytes() / 8 >= bytes;
    ck_assert_msg(kept == room, "a %zu-byte block was %s with %llu bytes of memory", bytes,
                  kept ? "kept" : "not kept", (unsigned long long)os_physical_bytes());
    pool_host_give(pool, again, cap_again);
}
END_TEST

/* A staged operand's device buffer goes back to the pool and serves the next operand that fits
 * it (not one less than half its size); two staged at once never share one; an allocation the
 * device's limit refuses first releases what the pool keeps (test_memory covers the limit). */
START_TEST(test_staged_buffers_are_reused_and_never_shared)
{
    struct pool_device *dev = pool_device_at(pool, 0);
    cl_command_queue queue = pool_acquire_queue(dev);
    float *host = tu_malloc(sizeof(float) * 4096);
    for (int i = 0; i < 4096; i++)
        host[i] = (float)i;
    struct clops_tensor big = {
        .data = host, .dtype = CLOPS_F32, .rank = 1, .shape = {4096}, .strides = {1}};
    struct clops_tensor mid = big, small = big;
    mid.shape[0] = 3000;
    small.shape[0] = 1000;
    struct staged_tensor s1, s2, s3;
    ck_assert_int_eq(tensor_stage(pool, dev, queue, &big, 1, &s1, "test", "x"), CLOPS_OK);
    ck_assert_int_eq(clFinish(queue), CL_SUCCESS);
    const cl_mem first = s1.mem;
    tensor_release(&s1);
    ck_assert_int_eq(tensor_stage(pool, dev, queue, &small, 1, &s2, "test", "x"), CLOPS_OK);
    ck_assert_ptr_ne(s2.mem, first); /* 4000 bytes in a 16 KiB buffer: too wasteful */
    ck_assert_int_eq(tensor_stage(pool, dev, queue, &mid, 1, &s3, "test", "x"), CLOPS_OK);
    ck_assert_ptr_eq(s3.mem, first);
    float back[3000];
    ck_assert_int_eq(
        clEnqueueReadBuffer(queue, s3.mem, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL),
        CL_SUCCESS);
    ck_assert(memcmp(back, host, sizeof back) == 0);
    tensor_release(&s2);
    tensor_release(&s3);
    free(host);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE_FIXTURE("staging", open_pool, close_pool),
        TU_LOOP(test_views_round_trip_through_chunks_of_any_size,
                (int)(sizeof views / sizeof views[0])),
        TU_LOOP(test_views_round_trip_in_one_write_on_a_cpu, (int)(sizeof views / sizeof views[0])),
        TU_LOOP(test_views_round_trip_with_copies_in_parts, (int)(sizeof views / sizeof views[0])),
        TU_TEST(test_copier_runs_every_part_once),
        TU_TEST(test_copier_in_a_forked_child_copies_alone_and_returns),
        TU_TEST(test_host_blocks_are_reused_and_never_shared),
        TU_TEST(test_a_large_host_block_is_kept_where_memory_allows),
        TU_TEST(test_staged_buffers_are_reused_and_never_shared),
    };
    return tu_run_tests("staging", 0, 1, tests, TU_COUNT(tests));
}
