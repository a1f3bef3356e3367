/* test_check.c — check_sized: a call checked without running it, for every operator. It refuses
 * exactly what a run refuses (same status, same message), runs nothing and writes nothing, takes
 * tensors that are only descriptions and a NULL pool, and reports the shape and dtype every
 * output must have. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* A row-major description: no data, no buffer. */
static struct clops_tensor described(int32_t dtype, int32_t rank, ...)
{
    struct clops_tensor t = {0};
    t.dtype = dtype;
    t.rank = rank;
    va_list ap;
    va_start(ap, rank);
    for (int32_t i = 0; i < rank; i++)
        t.shape[i] = va_arg(ap, int64_t);
    va_end(ap);
    int64_t stride = 1;
    for (int32_t i = rank - 1; i >= 0; i--) {
        t.strides[i] = stride;
        stride *= t.shape[i] > 0 ? t.shape[i] : 1;
    }
    return t;
}

/* The same view over host memory of its elements, filled with `fill` bytes. */
static struct clops_tensor in_memory(struct clops_tensor t, unsigned char fill, void **data)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t.rank; i++)
        n *= t.shape[i];
    const size_t bytes = (size_t)(n > 0 ? n : 1) * 8;
    *data = malloc(bytes);
    memset(*data, fill, bytes);
    t.data = *data;
    return t;
}

static struct clops_arg tensor(const char *name, const struct clops_tensor *t)
{
    return (struct clops_arg){.name = name, .kind = CLOPS_PARAM_TENSOR_IN, .tensor = t};
}

static struct clops_arg enum_text(const char *name, const char *s)
{
    return (struct clops_arg){.name = name, .kind = CLOPS_PARAM_ENUM, .s = s};
}

static struct clops_arg int64(const char *name, int64_t i)
{
    return (struct clops_arg){.name = name, .kind = CLOPS_PARAM_INT64, .i = i};
}

enum { SPECS = 8 };

struct checked {
    int32_t status;
    char message[1024];
    struct clops_output_spec specs[SPECS];
    int32_t count;
};

static struct checked check_call(struct clops_pool *pool, const char *op_name,
                                 const struct clops_arg *args, int32_t nargs)
{
    const struct clops_api *api = tu_api();
    ck_assert(CLOPS_API_HAS(api, check_sized));
    struct checked c;
    memset(&c, 0xa5, sizeof c);
    c.status = api->check_sized(pool, api->op_find(op_name), args, nargs, sizeof(struct clops_arg),
                                c.specs, sizeof c.specs[0], SPECS, &c.count);
    snprintf(c.message, sizeof c.message, "%s", api->last_error());
    return c;
}

static void expect_spec(const struct checked *c, int32_t k, int32_t param, int32_t dtype,
                        int32_t rank, int64_t s0, int64_t s1, int64_t s2)
{
    ck_assert_int_gt(c->count, k);
    const struct clops_output_spec *s = &c->specs[k];
    ck_assert_uint_eq(s->struct_size, sizeof *s);
    ck_assert_int_eq(s->param, param);
    ck_assert_int_eq(s->rank, rank);
    if (rank < 0)
        return;
    ck_assert_int_eq(s->dtype, dtype);
    const int64_t want[3] = {s0, s1, s2};
    for (int32_t i = 0; i < rank; i++)
        ck_assert_int_eq(s->shape[i], want[i]);
}

static void expect_ok(const struct checked *c)
{
    ck_assert_msg(c->status == CLOPS_OK, "check: %s", c->message);
}

/* ---- Valid calls: OK, and what each output must be ------------------------------------------ */

START_TEST(test_gemm_reports_c_from_op_a_and_op_b)
{
    struct clops_tensor a = described(CLOPS_F64, 2, (int64_t)7, (int64_t)5);
    struct clops_tensor b = described(CLOPS_F64, 2, (int64_t)7, (int64_t)3);
    struct clops_tensor c = described(CLOPS_F64, 2, (int64_t)5, (int64_t)3);
    const struct clops_arg args[] = {tensor("a", &a), tensor("b", &b), tensor("c", &c),
                                     enum_text("trans_a", "transpose")};
    struct checked r = check_call(tu_pool(), "gemm", args, 4);
    expect_ok(&r);
    ck_assert_int_eq(r.count, 1);
    expect_spec(&r, 0, 2, CLOPS_F64, 2, 5, 3, 0);
    /* A wrong C is refused, and what it must be is still reported. */
    c.shape[1] = 4;
    r = check_call(tu_pool(), "gemm", args, 4);
    ck_assert_int_eq(r.status, CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(r.message, "parameter 'c'"));
    expect_spec(&r, 0, 2, CLOPS_F64, 2, 5, 3, 0);
}
END_TEST

START_TEST(test_reduce_reports_out_by_op_and_axis)
{
    struct clops_tensor x = described(CLOPS_I32, 2, (int64_t)6, (int64_t)4);
    struct clops_tensor out = described(CLOPS_I64, 1, (int64_t)4);
    struct clops_arg args[] = {tensor("x", &x), tensor("out", &out), enum_text("op", "sum"),
                               int64("axis", 0)};
    struct checked r = check_call(tu_pool(), "reduce", args, 4);
    expect_ok(&r);
    expect_spec(&r, 0, 1, CLOPS_I64, 1, 4, 0, 0); /* the sum of i32 is i64 */
    args[2] = enum_text("op", "max");
    args[3] = int64("axis", 1);
    r = check_call(tu_pool(), "reduce", args, 4);
    ck_assert_int_eq(r.status, CLOPS_ERR_INVALID_ARGUMENT); /* out is i64, max gives i32 */
    expect_spec(&r, 0, 1, CLOPS_I32, 1, 6, 0, 0);
    args[2] = enum_text("op", "argmin");
    args[3] = int64("axis", -1);
    r = check_call(tu_pool(), "reduce", args, 4);
    ck_assert_int_eq(r.status, CLOPS_ERR_INVALID_ARGUMENT); /* one result, out has 4 */
    expect_spec(&r, 0, 1, CLOPS_I64, 1, 1, 0, 0);
}
END_TEST

START_TEST(test_transpose_reports_y_with_the_last_axes_swapped)
{
    struct clops_tensor x = described(CLOPS_U8, 3, (int64_t)3, (int64_t)5, (int64_t)7);
    struct clops_tensor y = described(CLOPS_U8, 3, (int64_t)3, (int64_t)7, (int64_t)5);
    const struct clops_arg args[] = {tensor("x", &x), tensor("y", &y)};
    struct checked r = check_call(tu_pool(), "transpose", args, 2);
    expect_ok(&r);
    expect_spec(&r, 0, 1, CLOPS_U8, 3, 3, 7, 5);
}
END_TEST

START_TEST(test_lu_family_report_factors_pivots_and_info)
{
    struct clops_tensor a = described(CLOPS_F32, 2, (int64_t)6, (int64_t)4);
    struct clops_tensor ipiv = described(CLOPS_I32, 1, (int64_t)4);
    struct clops_tensor info = described(CLOPS_I32, 1, (int64_t)1);
    const struct clops_arg lu[] = {tensor("a", &a), tensor("ipiv", &ipiv), tensor("info", &info)};
    struct checked r = check_call(tu_pool(), "lu", lu, 3);
    expect_ok(&r);
    ck_assert_int_eq(r.count, 3);
    expect_spec(&r, 0, 0, CLOPS_F32, 2, 6, 4, 0);
    expect_spec(&r, 1, 1, CLOPS_I32, 1, 4, 0, 0);
    expect_spec(&r, 2, 2, CLOPS_I32, 1, 1, 0, 0);

    struct clops_tensor sq = described(CLOPS_F64, 2, (int64_t)5, (int64_t)5);
    struct clops_tensor b = described(CLOPS_F64, 2, (int64_t)5, (int64_t)2);
    struct clops_tensor piv5 = described(CLOPS_I32, 1, (int64_t)5);
    const struct clops_arg solve[] = {tensor("a", &sq), tensor("b", &b), tensor("ipiv", &piv5),
                                      tensor("info", &info)};
    r = check_call(tu_pool(), "solve", solve, 4);
    expect_ok(&r);
    ck_assert_int_eq(r.count, 4);
    expect_spec(&r, 0, 0, CLOPS_F64, 2, 5, 5, 0);
    expect_spec(&r, 1, 1, CLOPS_F64, 2, 5, 2, 0);
    expect_spec(&r, 2, 2, CLOPS_I32, 1, 5, 0, 0);
    expect_spec(&r, 3, 3, CLOPS_I32, 1, 1, 0, 0);

    const struct clops_arg lu_solve[] = {tensor("lu", &sq), tensor("ipiv", &piv5), tensor("b", &b)};
    r = check_call(tu_pool(), "lu_solve", lu_solve, 3);
    expect_ok(&r);
    ck_assert_int_eq(r.count, 1);
    expect_spec(&r, 0, 2, CLOPS_F64, 2, 5, 2, 0);
}
END_TEST

START_TEST(test_mandelbrot_reports_the_image_from_the_iterations)
{
    struct clops_tensor it = described(CLOPS_U32, 2, (int64_t)9, (int64_t)11);
    struct clops_tensor image = described(CLOPS_U8, 3, (int64_t)9, (int64_t)11, (int64_t)4);
    const struct clops_arg args[] = {tensor("iterations", &it), tensor("image", &image)};
    struct checked r = check_call(tu_pool(), "mandelbrot", args, 2);
    expect_ok(&r);
    ck_assert_int_eq(r.count, 2);
    expect_spec(&r, 0, 0, CLOPS_U32, 2, 9, 11, 0);
    expect_spec(&r, 1, 1, CLOPS_U8, 3, 9, 11, 4);
    /* Left out, the optional image has no spec. */
    r = check_call(tu_pool(), "mandelbrot", args, 1);
    expect_ok(&r);
    expect_spec(&r, 1, 1, 0, -1, 0, 0, 0);
}
END_TEST

/* ---- A check refuses what a run refuses, runs nothing and writes nothing --------------------- */

/* One refused call per operator, over real host memory filled with 0x5a. */
struct refusal {
    const char *op;
    struct clops_tensor t[4];
    int32_t nt;
    const char *names[4];
};

static void make_refusals(struct refusal *r, void **mem)
{
    int m = 0;
    /* gemm: K of op(B) differs from op(A)'s. */
    r[0] = (struct refusal){.op = "gemm", .nt = 3, .names = {"a", "b", "c"}};
    r[0].t[0] = in_memory(described(CLOPS_F32, 2, (int64_t)4, (int64_t)6), 0x5a, &mem[m++]);
    r[0].t[1] = in_memory(described(CLOPS_F32, 2, (int64_t)5, (int64_t)3), 0x5a, &mem[m++]);
    r[0].t[2] = in_memory(described(CLOPS_F32, 2, (int64_t)4, (int64_t)3), 0x5a, &mem[m++]);
    /* reduce: out has the wrong length for axis 0. */
    r[1] = (struct refusal){.op = "reduce", .nt = 2, .names = {"x", "out"}};
    r[1].t[0] = in_memory(described(CLOPS_F32, 2, (int64_t)4, (int64_t)6), 0x5a, &mem[m++]);
    r[1].t[1] = in_memory(described(CLOPS_F32, 1, (int64_t)4), 0x5a, &mem[m++]);
    /* transpose: y not x's transposed. */
    r[2] = (struct refusal){.op = "transpose", .nt = 2, .names = {"x", "y"}};
    r[2].t[0] = in_memory(described(CLOPS_F64, 2, (int64_t)4, (int64_t)6), 0x5a, &mem[m++]);
    r[2].t[1] = in_memory(described(CLOPS_F64, 2, (int64_t)4, (int64_t)6), 0x5a, &mem[m++]);
    /* lu: ipiv too short. */
    r[3] = (struct refusal){.op = "lu", .nt = 3, .names = {"a", "ipiv", "info"}};
    r[3].t[0] = in_memory(described(CLOPS_F64, 2, (int64_t)5, (int64_t)5), 0x5a, &mem[m++]);
    r[3].t[1] = in_memory(described(CLOPS_I32, 1, (int64_t)4), 0x5a, &mem[m++]);
    r[3].t[2] = in_memory(described(CLOPS_I32, 1, (int64_t)1), 0x5a, &mem[m++]);
    /* solve: a not square. */
    r[4] = (struct refusal){.op = "solve", .nt = 4, .names = {"a", "b", "ipiv", "info"}};
    r[4].t[0] = in_memory(described(CLOPS_F64, 2, (int64_t)3, (int64_t)4), 0x5a, &mem[m++]);
    r[4].t[1] = in_memory(described(CLOPS_F64, 2, (int64_t)3, (int64_t)1), 0x5a, &mem[m++]);
    r[4].t[2] = in_memory(described(CLOPS_I32, 1, (int64_t)3), 0x5a, &mem[m++]);
    r[4].t[3] = in_memory(described(CLOPS_I32, 1, (int64_t)1), 0x5a, &mem[m++]);
    /* lu_solve: b has the wrong number of rows. */
    r[5] = (struct refusal){.op = "lu_solve", .nt = 3, .names = {"lu", "ipiv", "b"}};
    r[5].t[0] = in_memory(described(CLOPS_F64, 2, (int64_t)3, (int64_t)3), 0x5a, &mem[m++]);
    r[5].t[1] = in_memory(described(CLOPS_I32, 1, (int64_t)3), 0x5a, &mem[m++]);
    r[5].t[2] = in_memory(described(CLOPS_F64, 2, (int64_t)4, (int64_t)2), 0x5a, &mem[m++]);
    /* mandelbrot: an image of 3 channels. */
    r[6] = (struct refusal){.op = "mandelbrot", .nt = 2, .names = {"iterations", "image"}};
    r[6].t[0] = in_memory(described(CLOPS_U32, 2, (int64_t)8, (int64_t)8), 0x5a, &mem[m++]);
    r[6].t[1] =
        in_memory(described(CLOPS_U8, 3, (int64_t)8, (int64_t)8, (int64_t)3), 0x5a, &mem[m++]);
}

static int memory_untouched(const struct refusal *r)
{
    for (int32_t i = 0; i < r->nt; i++) {
        const unsigned char *p = r->t[i].data;
        int64_t n = 1;
        for (int32_t d = 0; d < r->t[i].rank; d++)
            n *= r->t[i].shape[d];
        for (int64_t k = 0; k < n * 4; k++)
            if (p[k] != 0x5a)
                return 0;
    }
    return 1;
}

START_TEST(test_refusals_match_a_run_of_every_operator)
{
    const struct clops_api *api = tu_api();
    struct refusal r[7];
    void *mem[32] = {0};
    make_refusals(r, mem);
    for (int i = 0; i < 7; i++) {
        struct clops_arg args[4];
        for (int32_t k = 0; k < r[i].nt; k++)
            args[k] = tensor(r[i].names[k], &r[i].t[k]);
        struct checked c = check_call(tu_pool(), r[i].op, args, r[i].nt);
        ck_assert_msg(c.status != CLOPS_OK, "%s: the check accepted a call a run refuses", r[i].op);
        ck_assert_msg(memory_untouched(&r[i]), "%s: the check wrote host memory", r[i].op);
        int32_t run =
            api->invoke_sized(tu_pool(), api->op_find(r[i].op), args, r[i].nt, sizeof args[0]);
        ck_assert_int_eq(run, c.status);
        ck_assert_str_eq(api->last_error(), c.message);
        ck_assert_msg(strncmp(c.message, r[i].op, strlen(r[i].op)) == 0, "%s", c.message);
    }
    for (int i = 0; i < 32; i++)
        free(mem[i]);
}
END_TEST

/* lu_solve reads host pivots as they are: a check refuses a pivot out of 1 .. N exactly as a run
 * does (issue 22), for both values of trans and a strided ipiv, and writes nothing. lu and solve
 * write ipiv, so whatever it holds before the call is no reason to refuse it. */
START_TEST(test_host_pivots_out_of_range_are_refused_as_a_run_refuses)
{
    const struct clops_api *api = tu_api();
    double lu[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, b[3] = {1, 2, 3};
    struct clops_tensor tlu = described(CLOPS_F64, 2, (int64_t)3, (int64_t)3);
    struct clops_tensor tb = described(CLOPS_F64, 2, (int64_t)3, (int64_t)1);
    struct clops_tensor tpiv = described(CLOPS_I32, 1, (int64_t)3);
    tlu.data = lu;
    tb.data = b;
    /* ipiv[k] at pivots[k * stride]; the 99s lie between the elements of the strided view. */
    const struct {
        int32_t pivots[5];
        int64_t stride;
        const char *message;
    } cases[] = {
        {{0, 2, 3}, 1, "ipiv[0] = 0; expected 1 .. N = 3"},
        {{1, 4, 3}, 1, "ipiv[1] = 4; expected 1 .. N = 3"},
        {{1, 2, -1}, 1, "ipiv[2] = -1; expected 1 .. N = 3"},
        {{1, 99, 0, 99, 3}, 2, "ipiv[1] = 0; expected 1 .. N = 3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int trans = 0; trans < 2; trans++) {
            int32_t pivots[5];
            memcpy(pivots, cases[k].pivots, sizeof pivots);
            tpiv.data = pivots;
            tpiv.strides[0] = cases[k].stride;
            const struct clops_arg args[] = {tensor("lu", &tlu), tensor("ipiv", &tpiv),
                                             tensor("b", &tb),
                                             enum_text("trans", trans ? "transpose" : "none")};
            struct checked c = check_call(tu_pool(), "lu_solve", args, 4);
            ck_assert_int_eq(c.status, CLOPS_ERR_INVALID_ARGUMENT);
            ck_assert_msg(strstr(c.message, cases[k].message) != NULL, "case %zu: %s", k,
                          c.message);
            const struct clops_op *op = api->op_find("lu_solve");
            ck_assert_int_eq(api->invoke_sized(tu_pool(), op, args, 4, sizeof args[0]), c.status);
            ck_assert_str_eq(api->last_error(), c.message);
            ck_assert(b[0] == 1 && b[1] == 2 && b[2] == 3);
        }
    }
    /* In range, the same call is accepted. */
    int32_t pivots[3] = {3, 2, 3};
    tpiv.data = pivots;
    tpiv.strides[0] = 1;
    const struct clops_arg args[] = {tensor("lu", &tlu), tensor("ipiv", &tpiv), tensor("b", &tb)};
    struct checked c = check_call(tu_pool(), "lu_solve", args, 3);
    expect_ok(&c);
    /* solve's ipiv is an output: zeros in it are no reason to refuse the call. */
    int32_t zeros[3] = {0, 0, 0}, info = 0;
    struct clops_tensor tinfo = described(CLOPS_I32, 1, (int64_t)1);
    tpiv.data = zeros;
    tinfo.data = &info;
    const struct clops_arg solve[] = {tensor("a", &tlu), tensor("b", &tb), tensor("ipiv", &tpiv),
                                      tensor("info", &tinfo)};
    c = check_call(tu_pool(), "solve", solve, 4);
    expect_ok(&c);
}
END_TEST

/* A valid check over real memory: nothing written, nothing counted, no device touched. */
START_TEST(test_a_valid_check_runs_and_counts_nothing)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool();
    void *mem[3];
    struct clops_tensor a =
        in_memory(described(CLOPS_F32, 2, (int64_t)4, (int64_t)6), 0x5a, &mem[0]);
    struct clops_tensor b =
        in_memory(described(CLOPS_F32, 2, (int64_t)6, (int64_t)3), 0x5a, &mem[1]);
    struct clops_tensor c =
        in_memory(described(CLOPS_F32, 2, (int64_t)4, (int64_t)3), 0x5a, &mem[2]);
    const struct clops_arg args[] = {tensor("a", &a), tensor("b", &b), tensor("c", &c)};
    struct clops_stats before = {.struct_size = sizeof before},
                       after = {.struct_size = sizeof after};
    ck_assert_int_eq(api->pool_stats(pool, &before), CLOPS_OK);
    struct checked r = check_call(pool, "gemm", args, 3);
    expect_ok(&r);
    ck_assert_int_eq(api->pool_stats(pool, &after), CLOPS_OK);
    ck_assert_int_eq(after.calls, before.calls);
    ck_assert_int_eq(after.bytes_uploaded, before.bytes_uploaded);
    ck_assert_int_eq(after.bytes_downloaded, before.bytes_downloaded);
    const unsigned char *cc = mem[2];
    for (int k = 0; k < 4 * 3 * 4; k++)
        ck_assert_uint_eq(cc[k], 0x5a);
    for (int i = 0; i < 3; i++)
        free(mem[i]);
}
END_TEST

/* Without a pool: the same checks, except those a device decides (double precision). */
START_TEST(test_a_check_needs_no_pool)
{
    struct clops_tensor x = described(CLOPS_F64, 2, (int64_t)3, (int64_t)8);
    struct clops_tensor y = described(CLOPS_F64, 2, (int64_t)8, (int64_t)3);
    const struct clops_arg args[] = {tensor("x", &x), tensor("y", &y)};
    struct checked r = check_call(NULL, "transpose", args, 2);
    expect_ok(&r);
    expect_spec(&r, 0, 1, CLOPS_F64, 2, 8, 3, 0);
    y.shape[0] = 3;
    r = check_call(NULL, "transpose", args, 2);
    ck_assert_int_eq(r.status, CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(r.message, "parameter 'y' has shape 3x3; expected 8x3"));
    /* Descriptions overlap nothing, whatever their (absent) memory. */
    struct clops_tensor a = described(CLOPS_F32, 2, (int64_t)4, (int64_t)4);
    const struct clops_arg same[] = {tensor("a", &a), tensor("b", &a), tensor("c", &a)};
    r = check_call(NULL, "gemm", same, 3);
    expect_ok(&r);
}
END_TEST

/* ---- Misuse of check_sized itself -------------------------------------------------------------
 */

START_TEST(test_bad_output_arrays_are_refused_naming_them)
{
    const struct clops_api *api = tu_api();
    const struct clops_op *op = api->op_find("lu");
    struct clops_tensor a = described(CLOPS_F32, 2, (int64_t)3, (int64_t)3);
    struct clops_tensor p = described(CLOPS_I32, 1, (int64_t)3);
    struct clops_tensor i = described(CLOPS_I32, 1, (int64_t)1);
    const struct clops_arg args[] = {tensor("a", &a), tensor("ipiv", &p), tensor("info", &i)};
    struct clops_output_spec specs[3];
    int32_t count = -7;
    ck_assert_int_eq(api->check_sized(NULL, op, args, 3, sizeof args[0], specs, 16, 3, &count),
                     CLOPS_ERR_ABI_MISMATCH);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'output_size' = 16"));
    ck_assert_int_eq(
        api->check_sized(NULL, op, args, 3, sizeof args[0], NULL, sizeof specs[0], 2, &count),
        CLOPS_ERR_INVALID_ARGUMENT);
    /* Capacity 0: no array, and the count says how many outputs there are. */
    ck_assert_int_eq(api->check_sized(NULL, op, args, 3, sizeof args[0], NULL, 0, 0, &count),
                     CLOPS_OK);
    ck_assert_int_eq(count, 3);
    /* A larger host element (a newer header): the plugin steps by it, writes what it knows. */
    struct {
        struct clops_output_spec spec;
        int64_t future;
    } wide[3];
    memset(wide, 0x33, sizeof wide);
    ck_assert_int_eq(api->check_sized(NULL, op, args, 3, sizeof args[0], &wide[0].spec,
                                      sizeof wide[0], 3, &count),
                     CLOPS_OK);
    ck_assert_int_eq(wide[1].spec.param, 1);
    ck_assert_int_eq(wide[1].spec.shape[0], 3);
    ck_assert_uint_eq(wide[2].spec.struct_size, sizeof(struct clops_output_spec));
    ck_assert_int_eq(wide[2].future, 0x3333333333333333LL);
    ck_assert_int_eq(api->check_sized(NULL, NULL, args, 3, sizeof args[0], NULL, 0, 0, &count),
                     CLOPS_ERR_NOT_FOUND);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE("valid"),
        TU_TEST(test_gemm_reports_c_from_op_a_and_op_b),
        TU_TEST(test_reduce_reports_out_by_op_and_axis),
        TU_TEST(test_transpose_reports_y_with_the_last_axes_swapped),
        TU_TEST(test_lu_family_report_factors_pivots_and_info),
        TU_TEST(test_mandelbrot_reports_the_image_from_the_iterations),
        TU_CASE("runs nothing"),
        TU_TEST(test_refusals_match_a_run_of_every_operator),
        TU_TEST(test_host_pivots_out_of_range_are_refused_as_a_run_refuses),
        TU_TEST(test_a_valid_check_runs_and_counts_nothing),
        TU_TEST(test_a_check_needs_no_pool),
        TU_TEST(test_bad_output_arrays_are_refused_naming_them),
    };
    return tu_run_tests("check", 0, 1, tests, TU_COUNT(tests));
}
