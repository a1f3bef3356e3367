/* test_invoke.c — the generic invoke: bit-identical to the typed call, and every misuse
 * rejected with a message naming the parameter, without running anything; and what every call
 * keeps of its arguments (copies of the descriptors, not the host's). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

enum { M = 37, N = 29, K = 41 };

struct gemm_case {
    int32_t dtype;
    double a[M * K], b[K * N], c0[M * N];
    float af[M * K], bf[K * N], cf0[M * N];
};

static struct gemm_case g;

static void make_case(int32_t dtype, uint64_t seed)
{
    tu_seed(seed);
    g.dtype = dtype;
    tu_fill_f64(g.a, M * K);
    tu_fill_f64(g.b, K * N);
    tu_fill_f64(g.c0, M * N);
    for (int i = 0; i < M * K; i++)
        g.af[i] = (float)g.a[i];
    for (int i = 0; i < K * N; i++)
        g.bf[i] = (float)g.b[i];
    for (int i = 0; i < M * N; i++)
        g.cf0[i] = (float)g.c0[i];
}

/* Host matrices for the case: A is stored K×M when trans_a, B N×K when trans_b. */
struct operands {
    struct clops_tensor a, b, c;
    void *cdata;
    size_t cbytes;
};

static void make_operands(struct operands *o, int32_t trans_a, int32_t trans_b)
{
    int f64 = g.dtype == CLOPS_F64;
    int64_t es = f64 ? 8 : 4;
    void *a = f64 ? (void *)g.a : (void *)g.af;
    void *b = f64 ? (void *)g.b : (void *)g.bf;
    o->a = trans_a ? clops_matrix(a, g.dtype, K, M, M, 0) : clops_matrix(a, g.dtype, M, K, K, 0);
    o->b = trans_b ? clops_matrix(b, g.dtype, N, K, K, 0) : clops_matrix(b, g.dtype, K, N, N, 0);
    o->cbytes = (size_t)(M * N * es);
    o->cdata = tu_memdup(f64 ? (void *)g.c0 : (void *)g.cf0, o->cbytes);
    /* C column-major: the invoke path must handle layouts exactly as the typed path. */
    o->c = clops_matrix(o->cdata, g.dtype, M, N, M, 1);
}

static const struct clops_op *gemm_op(void)
{
    return tu_op("gemm");
}

static void typed_call(struct operands *o, int32_t ta, int32_t tb, double alpha, double beta)
{
    clops_gemm_fn gemm = (clops_gemm_fn)gemm_op()->entry;
    int32_t status = gemm(tu_pool(), &o->a, &o->b, &o->c, ta, tb, alpha, beta);
    ck_assert_msg(status == CLOPS_OK, "typed gemm: %s", tu_api()->last_error());
}

static struct clops_arg tensor_arg(const char *name, const struct clops_tensor *t)
{
    struct clops_arg a = {.name = name, .kind = CLOPS_PARAM_TENSOR_IN, .tensor = t};
    return a;
}

static struct clops_arg enum_arg(const char *name, const char *s, int64_t i)
{
    struct clops_arg a = {.name = name, .kind = CLOPS_PARAM_ENUM, .s = s, .i = i};
    return a;
}

static struct clops_arg double_arg(const char *name, double d)
{
    struct clops_arg a = {.name = name, .kind = CLOPS_PARAM_DOUBLE, .d = d};
    return a;
}

/* gemm's seven arguments in order, unnamed: o's tensors, trans_a and trans_b as given (an enum by
 * string or by index), alpha and beta. */
static void positional_args(struct clops_arg args[7], const struct operands *o,
                            struct clops_arg trans_a, struct clops_arg trans_b, double alpha,
                            double beta)
{
    args[0] = tensor_arg(NULL, &o->a);
    args[1] = tensor_arg(NULL, &o->b);
    args[2] = tensor_arg(NULL, &o->c);
    args[3] = trans_a;
    args[4] = trans_b;
    args[5] = double_arg(NULL, alpha);
    args[6] = double_arg(NULL, beta);
}

/* A new case of dtype from seed, its operands untransposed, and in args the positional
 * arguments of a valid call with enums by name ("none"). */
static void valid_positional_call(int32_t dtype, uint64_t seed, struct operands *o,
                                  struct clops_arg args[7], double alpha, double beta)
{
    make_case(dtype, seed);
    make_operands(o, 0, 0);
    positional_args(args, o, enum_arg(NULL, "none", 0), enum_arg(NULL, "none", 0), alpha, beta);
}

static void check_identical(int32_t dtype, int32_t ta, int32_t tb, double alpha, double beta,
                            int named)
{
    make_case(dtype, (uint64_t)(dtype * 100 + ta * 10 + tb));
    struct operands direct, generic;
    make_operands(&direct, ta, tb);
    make_operands(&generic, ta, tb);
    typed_call(&direct, ta, tb, alpha, beta);
    struct clops_arg args[7];
    if (named) {
        /* Named, in a scrambled order, enums by string. */
        args[0] = double_arg("beta", beta);
        args[1] = tensor_arg("c", &generic.c);
        args[2] = enum_arg("trans_b", tb ? "transpose" : "none", 0);
        args[3] = tensor_arg("b", &generic.b);
        args[4] = double_arg("alpha", alpha);
        args[5] = enum_arg("trans_a", ta ? "transpose" : "none", 0);
        args[6] = tensor_arg("a", &generic.a);
    } else {
        /* Positional, enums by index. */
        positional_args(args, &generic, enum_arg(NULL, NULL, ta), enum_arg(NULL, NULL, tb), alpha,
                        beta);
    }
    int32_t status = tu_api()->invoke(tu_pool(), gemm_op(), args, 7);
    ck_assert_msg(status == CLOPS_OK, "invoke: %s", tu_api()->last_error());
    ck_assert_msg(memcmp(direct.cdata, generic.cdata, direct.cbytes) == 0,
                  "invoke and the typed call differ (dtype %d, ta %d, tb %d)", dtype, ta, tb);
    /* And the result is a real product, not an untouched C. */
    ck_assert(memcmp(direct.cdata, dtype == CLOPS_F64 ? (void *)g.c0 : (void *)g.cf0,
                     direct.cbytes) != 0);
    free(direct.cdata);
    free(generic.cdata);
}

START_TEST(test_invoke_positional_is_bit_identical)
{
    int32_t dtype = _i < 4 ? CLOPS_F32 : CLOPS_F64;
    check_identical(dtype, _i & 1, (_i >> 1) & 1, 1.25, -0.5, 0);
}
END_TEST

START_TEST(test_invoke_named_is_bit_identical)
{
    int32_t dtype = _i < 4 ? CLOPS_F32 : CLOPS_F64;
    check_identical(dtype, _i & 1, (_i >> 1) & 1, -0.75, 2.0, 1);
}
END_TEST

START_TEST(test_invoke_applies_defaults)
{
    make_case(CLOPS_F64, 7);
    struct operands direct, generic;
    make_operands(&direct, 0, 0);
    make_operands(&generic, 0, 0);
    typed_call(&direct, CLOPS_NO_TRANS, CLOPS_NO_TRANS, 1.0, 0.0);
    struct clops_arg args[] = {tensor_arg("a", &generic.a), tensor_arg("b", &generic.b),
                               tensor_arg("c", &generic.c)};
    ck_assert_int_eq(tu_api()->invoke(tu_pool(), gemm_op(), args, 3), CLOPS_OK);
    ck_assert(memcmp(direct.cdata, generic.cdata, direct.cbytes) == 0);
    free(direct.cdata);
    free(generic.cdata);
}
END_TEST

/* Runs a bad invoke (invoke_sized when arg_size is not 0): asserts the status, that the message
 * has `needle`, and that C and the operator's call count are unchanged. */
static void expect_rejected_sized(const struct clops_op *op, const struct clops_arg *args,
                                  int32_t n, uint32_t arg_size, int32_t status, const char *needle,
                                  const struct operands *o)
{
    const struct clops_api *api = tu_api();
    struct clops_op_stats before = {.struct_size = sizeof before};
    struct clops_op_stats after = {.struct_size = sizeof after};
    int32_t gemm_index = api->op_index(gemm_op());
    ck_assert_int_eq(api->pool_op_stats(tu_pool(), gemm_index, &before), CLOPS_OK);
    void *saved = tu_memdup(o->cdata, o->cbytes);
    int32_t got = arg_size == 0 ? api->invoke(tu_pool(), op, args, n)
                                : api->invoke_sized(tu_pool(), op, args, n, arg_size);
    ck_assert_msg(got == status, "expected %s, got %s (%s)", api->status_name(status),
                  api->status_name(got), api->last_error());
    ck_assert_msg(strstr(api->last_error(), needle) != NULL, "message \"%s\" lacks \"%s\"",
                  api->last_error(), needle);
    ck_assert(memcmp(saved, o->cdata, o->cbytes) == 0);
    ck_assert_int_eq(api->pool_op_stats(tu_pool(), gemm_index, &after), CLOPS_OK);
    ck_assert_int_eq(after.calls, before.calls);
    free(saved);
}

static void expect_rejected(const struct clops_op *op, const struct clops_arg *args, int32_t n,
                            int32_t status, const char *needle, const struct operands *o)
{
    expect_rejected_sized(op, args, n, 0, status, needle, o);
}

START_TEST(test_invoke_rejects_misuse)
{
    struct operands o;
    struct clops_arg full[9];
    valid_positional_call(CLOPS_F32, 3, &o, full, 1.0, 0.0);
    const struct clops_op *op = gemm_op();
    full[7] = enum_arg(NULL, "fp32", 0); /* precision, gemm's eighth and last parameter */
    full[8] = double_arg(NULL, 3.0);

    /* An extra positional argument. */
    expect_rejected(op, full, 9, CLOPS_ERR_INVALID_ARGUMENT, "extra argument #9", &o);

    /* A missing required parameter. */
    expect_rejected(op, full, 2, CLOPS_ERR_INVALID_ARGUMENT, "missing required parameter 'c'", &o);

    /* An unknown name. */
    struct clops_arg unknown[4] = {full[0], full[1], full[2], double_arg("alpah", 2.0)};
    expect_rejected(op, unknown, 4, CLOPS_ERR_NOT_FOUND, "no parameter named 'alpah'", &o);

    /* A wrong kind: a double where a tensor is expected, an int64 where a double is. */
    struct clops_arg wrong[3] = {full[0], double_arg(NULL, 1.0), full[2]};
    expect_rejected(op, wrong, 3, CLOPS_ERR_INVALID_ARGUMENT, "parameter 'b' expects a tensor", &o);
    struct clops_arg wrong2[4] = {
        full[0], full[1], full[2], {.name = "alpha", .kind = CLOPS_PARAM_INT64, .i = 2}};
    expect_rejected(op, wrong2, 4, CLOPS_ERR_INVALID_ARGUMENT, "'alpha' expects a double", &o);

    /* Bad enum values, by string and by index. */
    struct clops_arg bad_enum[4] = {full[0], full[1], full[2],
                                    enum_arg("trans_a", "transposed", 0)};
    expect_rejected(op, bad_enum, 4, CLOPS_ERR_INVALID_ARGUMENT, "'trans_a' = \"transposed\"", &o);
    bad_enum[3] = enum_arg("trans_b", NULL, 5);
    expect_rejected(op, bad_enum, 4, CLOPS_ERR_INVALID_ARGUMENT, "'trans_b' = 5", &o);

    /* The same parameter twice; a positional after a named one. */
    struct clops_arg twice[4] = {full[0], full[1], tensor_arg("c", &o.c), tensor_arg("c", &o.c)};
    expect_rejected(op, twice, 4, CLOPS_ERR_INVALID_ARGUMENT, "'c' is given twice", &o);
    struct clops_arg order[3] = {tensor_arg("a", &o.a), tensor_arg(NULL, &o.b), full[2]};
    expect_rejected(op, order, 3, CLOPS_ERR_INVALID_ARGUMENT, "follows a named", &o);

    /* A NULL tensor. */
    struct clops_arg null_tensor[3] = {full[0], full[1], tensor_arg(NULL, NULL)};
    expect_rejected(op, null_tensor, 3, CLOPS_ERR_INVALID_ARGUMENT, "'c' is NULL", &o);

    /* A negative count, a NULL args array, a descriptor that is not ours, no operator. */
    expect_rejected(op, full, -1, CLOPS_ERR_INVALID_ARGUMENT, "nargs = -1", &o);
    expect_rejected(op, NULL, 3, CLOPS_ERR_INVALID_ARGUMENT, "args", &o);
    struct clops_op forged = *op;
    expect_rejected(&forged, full, 7, CLOPS_ERR_NOT_FOUND, "not an operator", &o);
    expect_rejected(NULL, full, 7, CLOPS_ERR_NOT_FOUND, "'op' is NULL", &o);
    ck_assert_int_eq(tu_api()->invoke(NULL, op, full, 7), CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'pool' is NULL"));
    free(o.cdata);
}
END_TEST

START_TEST(test_invoke_passes_operator_errors_through)
{
    /* Kinds right, values wrong: the operator itself rejects it, naming the parameter. */
    make_case(CLOPS_F32, 4);
    struct operands o;
    make_operands(&o, 0, 0);
    o.b.shape[0] = K + 1;
    struct clops_arg args[3] = {tensor_arg(NULL, &o.a), tensor_arg(NULL, &o.b),
                                tensor_arg(NULL, &o.c)};
    int32_t status = tu_api()->invoke(tu_pool(), gemm_op(), args, 3);
    ck_assert_int_eq(status, CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'b'"));
    free(o.cdata);
}
END_TEST

/* The clops_arg of a hypothetical newer header: two members appended, which this plugin does
 * not know. Filled with a pattern no pointer or kind has, they must be skipped, not read. */
struct future_arg {
    struct clops_arg arg;
    int64_t appended[2];
};

static void check_sized_identical(int32_t dtype, int32_t ta, int32_t tb, int named,
                                  uint32_t arg_size)
{
    make_case(dtype, (uint64_t)(dtype * 1000 + ta * 10 + tb + 500));
    struct operands direct, generic;
    make_operands(&direct, ta, tb);
    make_operands(&generic, ta, tb);
    typed_call(&direct, ta, tb, -1.25, 0.5);
    struct clops_arg args[7];
    if (named) {
        args[0] = tensor_arg("c", &generic.c);
        args[1] = double_arg("alpha", -1.25);
        args[2] = enum_arg("trans_b", tb ? "transpose" : "none", 0);
        args[3] = tensor_arg("a", &generic.a);
        args[4] = double_arg("beta", 0.5);
        args[5] = tensor_arg("b", &generic.b);
        args[6] = enum_arg("trans_a", NULL, ta);
    } else {
        positional_args(args, &generic, enum_arg(NULL, ta ? "transpose" : "none", 0),
                        enum_arg(NULL, NULL, tb), -1.25, 0.5);
    }
    /* The host's array: elements arg_size bytes apart, the bytes past clops_arg garbage. */
    ck_assert_uint_ge(arg_size, sizeof(struct clops_arg));
    unsigned char *array = tu_malloc((size_t)arg_size * 7);
    memset(array, 0xA5, (size_t)arg_size * 7);
    for (int k = 0; k < 7; k++)
        memcpy(array + (size_t)k * arg_size, &args[k], sizeof args[k]);
    int32_t status = tu_api()->invoke_sized(tu_pool(), gemm_op(),
                                            (const struct clops_arg *)(void *)array, 7, arg_size);
    ck_assert_msg(status == CLOPS_OK, "invoke_sized(arg_size = %u): %s", (unsigned)arg_size,
                  tu_api()->last_error());
    ck_assert_msg(memcmp(direct.cdata, generic.cdata, direct.cbytes) == 0,
                  "invoke_sized(arg_size = %u) and the typed call differ", (unsigned)arg_size);
    ck_assert(memcmp(direct.cdata, dtype == CLOPS_F64 ? (void *)g.c0 : (void *)g.cf0,
                     direct.cbytes) != 0);
    free(array);
    free(direct.cdata);
    free(generic.cdata);
}

START_TEST(test_invoke_sized_with_this_headers_size_is_bit_identical)
{
    int32_t dtype = _i < 4 ? CLOPS_F32 : CLOPS_F64;
    check_sized_identical(dtype, _i & 1, (_i >> 1) & 1, _i & 1, sizeof(struct clops_arg));
}
END_TEST

START_TEST(test_invoke_sized_skips_a_newer_hosts_appended_members)
{
    int32_t dtype = _i < 4 ? CLOPS_F32 : CLOPS_F64;
    check_sized_identical(dtype, _i & 1, (_i >> 1) & 1, (_i >> 2) ^ (_i & 1),
                          sizeof(struct future_arg));
    /* Larger still, and not a struct this plugin could know: only the stride matters. */
    check_sized_identical(dtype, (_i >> 1) & 1, _i & 1, 1, sizeof(struct clops_arg) + 200);
}
END_TEST

START_TEST(test_invoke_sized_rejects_an_arg_size_below_abi_1_1)
{
    struct operands o;
    struct clops_arg full[7];
    valid_positional_call(CLOPS_F64, 9, &o, full, 2.0, 1.0);
    const struct clops_op *op = gemm_op();
    /* The array is a valid call read with 48-byte elements: a plugin that ignored arg_size
     * would run it and change C. */
    expect_rejected_sized(op, full, 7, 40, CLOPS_ERR_ABI_MISMATCH, "parameter 'arg_size' = 40", &o);
    expect_rejected_sized(op, full, 7, CLOPS_ARG_SIZE_1_1 - 8, CLOPS_ERR_ABI_MISMATCH,
                          "'arg_size' = 40; expected sizeof(struct clops_arg)", &o);
    expect_rejected_sized(op, full, 7, 1, CLOPS_ERR_ABI_MISMATCH, "'arg_size' = 1", &o);
    /* Not a sizeof: no multiple of the members' alignment (nargs passed for the size, say). */
    expect_rejected_sized(op, full, 7, 7, CLOPS_ERR_ABI_MISMATCH, "'arg_size' = 7", &o);
    expect_rejected_sized(op, full, 7, CLOPS_ARG_SIZE_1_1 + 4, CLOPS_ERR_ABI_MISMATCH,
                          "'arg_size' = 52", &o);
    /* The rest of invoke's checks hold for invoke_sized, ahead of arg_size's. */
    expect_rejected_sized(NULL, full, 7, sizeof full[0], CLOPS_ERR_NOT_FOUND, "'op' is NULL", &o);
    expect_rejected_sized(op, full, -1, sizeof full[0], CLOPS_ERR_INVALID_ARGUMENT, "nargs = -1",
                          &o);
    expect_rejected_sized(op, full, 2, sizeof full[0], CLOPS_ERR_INVALID_ARGUMENT,
                          "missing required parameter 'c'", &o);
    ck_assert_int_eq(tu_api()->invoke_sized(NULL, op, full, 7, sizeof full[0]),
                     CLOPS_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tu_api()->last_error(), "'pool' is NULL"));
    /* And the same array with the right size runs. */
    ck_assert_int_eq(tu_api()->invoke_sized(tu_pool(), op, full, 7, sizeof full[0]), CLOPS_OK);
    free(o.cdata);
}
END_TEST

/* ---- The call's own copies of the host's descriptors ---------------------------------------- */

enum { XM = 37, XN = 29 };

/* A host that changes its descriptors once a call has started (as it may once a non-blocking
 * call has returned): the log callback, which runs on the calling thread during the call, points
 * y at a decoy and makes both views column-major at the first kernel's time (kernel_times). */
struct reused_descriptors {
    struct clops_tensor *x, *y;
    float *decoy;
    int changed;
};

static void change_descriptors(int32_t level, const char *message, void *user)
{
    (void)level;
    struct reused_descriptors *r = user;
    if (r->changed || strstr(message, "kernel") == NULL)
        return;
    r->changed = 1;
    *r->x = clops_matrix(r->x->data, CLOPS_F32, XM, XN, XM, 1);
    *r->y = clops_matrix(r->decoy, CLOPS_F32, XN, XM, XN, 1);
}

START_TEST(test_call_computes_with_the_descriptors_it_was_given)
{
    static float x[XM * XN], y[XN * XM], decoy[XN * XM];
    tu_seed(23);
    tu_fill_f32(x, XM * XN);
    for (int i = 0; i < XN * XM; i++)
        decoy[i] = y[i] = 7.0f;
    struct clops_tensor tx = clops_matrix(x, CLOPS_F32, XM, XN, XN, 0);
    struct clops_tensor ty = clops_matrix(y, CLOPS_F32, XN, XM, XM, 0);
    struct clops_pool *pool = tu_pool_from_string("kernel_times = true;");
    struct reused_descriptors r = {&tx, &ty, decoy, 0};
    tu_api()->set_log_callback(change_descriptors, &r, CLOPS_LOG_INFO);
    clops_transpose_fn transpose = (clops_transpose_fn)tu_op("transpose")->entry;
    int32_t status = transpose(pool, &tx, &ty);
    tu_api()->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    ck_assert_msg(status == CLOPS_OK, "transpose: %s", tu_api()->last_error());
    ck_assert_msg(r.changed, "no kernel time was logged during the call");
    for (int i = 0; i < XM; i++)
        for (int j = 0; j < XN; j++)
            ck_assert_msg(y[j * XM + i] == x[i * XN + j], "y[%d][%d] = %g, expected x[%d][%d] = %g",
                          j, i, (double)y[j * XM + i], i, j, (double)x[i * XN + j]);
    for (int i = 0; i < XN * XM; i++)
        ck_assert_msg(decoy[i] == 7.0f, "the decoy the host pointed y at was written");
    tu_api()->pool_release(pool);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_LOOP(test_invoke_positional_is_bit_identical, 8),
        TU_LOOP(test_invoke_named_is_bit_identical, 8),
        TU_TEST(test_invoke_applies_defaults),
        TU_TEST(test_invoke_rejects_misuse),
        TU_TEST(test_invoke_passes_operator_errors_through),
        TU_LOOP(test_invoke_sized_with_this_headers_size_is_bit_identical, 8),
        TU_LOOP(test_invoke_sized_skips_a_newer_hosts_appended_members, 8),
        TU_TEST(test_invoke_sized_rejects_an_arg_size_below_abi_1_1),
        TU_TEST(test_call_computes_with_the_descriptors_it_was_given),
    };
    return tu_run_tests("invoke", 600, 0, tests, TU_COUNT(tests));
}
