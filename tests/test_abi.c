/* test_abi.c — ABI negotiation, the table's shape, descriptors, struct_size growth, errors. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static clops_plugin_entry_fn entry_symbol(void)
{
    clops_plugin_entry_fn entry =
        (clops_plugin_entry_fn)(uintptr_t)tu_symbol(tu_library(), "clops_plugin_entry");
    ck_assert_ptr_nonnull(entry);
    return entry;
}

START_TEST(test_entry_serves_major_1_only)
{
    clops_plugin_entry_fn entry = entry_symbol();
    const struct clops_api *api = entry(1);
    ck_assert_ptr_nonnull(api);
    ck_assert_uint_eq(api->struct_size, sizeof(struct clops_api));
    ck_assert_uint_eq(api->abi_major, 1);
    ck_assert_uint_eq(api->abi_minor, CLOPS_ABI_MINOR);
    ck_assert_ptr_null(entry(0));
    ck_assert_ptr_null(entry(2));
    ck_assert_ptr_null(entry(0xFFFFFFFFu));
    ck_assert_ptr_eq(entry(1), api); /* a static table, the same on every call */
}
END_TEST

START_TEST(test_table_has_every_member)
{
    const struct clops_api *api = tu_api();
    ck_assert(CLOPS_API_HAS(api, invoke));
    ck_assert(CLOPS_API_HAS(api, pool_device_stats));
    /* Every function pointer from `version` to the end is set. */
    const char *begin = (const char *)&api->version;
    const char *end = (const char *)api + api->struct_size;
    for (const char *p = begin; p < end; p += sizeof(void (*)(void))) {
        void (*fn)(void);
        memcpy(&fn, p, sizeof fn);
        ck_assert_msg(fn != NULL, "table member at offset %td is NULL", p - (const char *)api);
    }
    /* The library's version is the ABI's: major.minor of abi/clops.h, then a patch number. */
    char abi_prefix[32];
    snprintf(abi_prefix, sizeof abi_prefix, "%d.%d.", CLOPS_ABI_MAJOR, CLOPS_ABI_MINOR);
    ck_assert_msg(strncmp(api->version(), abi_prefix, strlen(abi_prefix)) == 0,
                  "version %s does not start with the ABI's %s", api->version(), abi_prefix);
}
END_TEST

START_TEST(test_internal_symbols_are_hidden)
{
    /* Only clops_plugin_entry is exported: internal names must not resolve. */
    ck_assert_ptr_null(tu_symbol(tu_library(), "entry_table"));
    ck_assert_ptr_null(tu_symbol(tu_library(), "pool_create"));
    ck_assert_ptr_null(tu_symbol(tu_library(), "err_set"));
    ck_assert_ptr_null(tu_symbol(tu_library(), "op_gemm"));
}
END_TEST

START_TEST(test_struct_layouts_are_pinned)
{
    /* These offsets are the ABI: a change here breaks every compiled host. */
    ck_assert_uint_eq(offsetof(struct clops_tensor, data), 0);
    ck_assert_uint_eq(offsetof(struct clops_tensor, buffer), 8);
    ck_assert_uint_eq(offsetof(struct clops_tensor, offset), 16);
    ck_assert_uint_eq(offsetof(struct clops_tensor, dtype), 24);
    ck_assert_uint_eq(offsetof(struct clops_tensor, rank), 28);
    ck_assert_uint_eq(offsetof(struct clops_tensor, shape), 32);
    ck_assert_uint_eq(offsetof(struct clops_tensor, strides), 64);
    ck_assert_uint_eq(sizeof(struct clops_tensor), 96);
    ck_assert_uint_eq(offsetof(struct clops_arg, tensor), 16);
    ck_assert_uint_eq(sizeof(struct clops_arg), 48);
    ck_assert_uint_eq(offsetof(struct clops_api, version), 8);
}
END_TEST

START_TEST(test_status_names_are_distinct)
{
    const struct clops_api *api = tu_api();
    for (int32_t a = CLOPS_OK; a <= CLOPS_ERR_INTERNAL; a++) {
        ck_assert_ptr_null(strstr(api->status_name(a), "UNKNOWN"));
        for (int32_t b = a + 1; b <= CLOPS_ERR_INTERNAL; b++)
            ck_assert_str_ne(api->status_name(a), api->status_name(b));
    }
    ck_assert_str_eq(api->status_name(CLOPS_ERR_CONFIG), "CLOPS_ERR_CONFIG");
    ck_assert_ptr_nonnull(strstr(api->status_name(999), "UNKNOWN"));
}
END_TEST

START_TEST(test_descriptors_enumerate_and_find)
{
    const struct clops_api *api = tu_api();
    int32_t n = api->op_count();
    ck_assert_int_ge(n, 1);
    for (int32_t i = 0; i < n; i++) {
        const struct clops_op *op = api->op_at(i);
        ck_assert_ptr_nonnull(op);
        ck_assert_uint_eq(op->struct_size, sizeof(struct clops_op));
        ck_assert_int_ge(op->version, 1);
        ck_assert_int_gt((int)strlen(op->summary), 10);
        ck_assert_int_gt((int)strlen(op->doc), 40);
        ck_assert_ptr_nonnull(op->entry);
        ck_assert_ptr_eq(api->op_find(op->name), op);
        ck_assert_int_eq(api->op_index(op), i);
        for (int32_t p = 0; p < op->param_count; p++) {
            const struct clops_param *param = &op->params[p];
            ck_assert_ptr_nonnull(param->name);
            ck_assert_ptr_nonnull(param->doc);
            ck_assert_int_ge(param->kind, CLOPS_PARAM_TENSOR_IN);
            ck_assert_int_le(param->kind, CLOPS_PARAM_STRING);
            int is_tensor = param->kind <= CLOPS_PARAM_TENSOR_INOUT;
            ck_assert_int_eq(param->dtypes != 0, is_tensor);
            ck_assert_int_eq(param->enum_values != NULL, param->kind == CLOPS_PARAM_ENUM);
            if (is_tensor && param->default_value != NULL)
                ck_assert_str_eq(param->default_value, CLOPS_OPTIONAL);
        }
    }
    ck_assert_ptr_null(api->op_at(-1));
    ck_assert_ptr_null(api->op_at(n));
}
END_TEST

START_TEST(test_gemm_descriptor_lists_its_parameters)
{
    const struct clops_op *op = tu_api()->op_find("gemm");
    ck_assert_ptr_nonnull(op);
    static const char *const names[] = {"a",       "b",     "c",    "trans_a",
                                        "trans_b", "alpha", "beta", "precision"};
    static const int32_t kinds[] = {
        CLOPS_PARAM_TENSOR_IN, CLOPS_PARAM_TENSOR_IN, CLOPS_PARAM_TENSOR_INOUT, CLOPS_PARAM_ENUM,
        CLOPS_PARAM_ENUM,      CLOPS_PARAM_DOUBLE,    CLOPS_PARAM_DOUBLE,       CLOPS_PARAM_ENUM};
    ck_assert_int_eq(op->param_count, 8);
    for (int i = 0; i < 8; i++) {
        ck_assert_str_eq(op->params[i].name, names[i]);
        ck_assert_int_eq(op->params[i].kind, kinds[i]);
    }
    ck_assert_uint_eq(op->params[0].dtypes,
                      CLOPS_DTYPE_BIT(CLOPS_F32) | CLOPS_DTYPE_BIT(CLOPS_F64));
    ck_assert_str_eq(op->params[3].enum_values[0], "none");
    ck_assert_str_eq(op->params[3].enum_values[1], "transpose");
    ck_assert_ptr_null(op->params[3].enum_values[2]);
    ck_assert_str_eq(op->params[6].default_value, "0");
}
END_TEST

START_TEST(test_op_find_unknown_names_it)
{
    const struct clops_api *api = tu_api();
    ck_assert_ptr_null(api->op_find("gemmm"));
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'gemmm'"));
    ck_assert_ptr_null(api->op_find(NULL));
}
END_TEST

START_TEST(test_devices_list_finds_a_device)
{
    const struct clops_api *api = tu_api();
    struct clops_device_info info[8];
    for (int i = 0; i < 8; i++)
        info[i].struct_size = sizeof info[i];
    int32_t count = -1;
    ck_assert_int_eq(api->devices_list(info, 8, &count), CLOPS_OK);
    ck_assert_int_ge(count, 1);
    ck_assert_int_gt((int)strlen(info[0].name), 0);
    ck_assert_int_gt(info[0].compute_units, 0);
    ck_assert_int_gt(info[0].global_mem_bytes, 0);
    ck_assert_int_eq(api->devices_list(NULL, 0, &count), CLOPS_OK); /* counting only */
    ck_assert_int_ge(count, 1);
    ck_assert_int_eq(api->devices_list(NULL, 1, &count), CLOPS_ERR_INVALID_ARGUMENT);
}
END_TEST

/* An array of a host whose clops_device_info is smaller (an older header, say) is stepped by
 * the host's struct_size, not the plugin's sizeof: nothing past each element is written. */
START_TEST(test_devices_list_steps_by_the_hosts_struct_size)
{
    const struct clops_api *api = tu_api();
    /* The host's struct ends before `fp64`: its array is 4 of those, packed, then a canary. */
    enum { OLD = offsetof(struct clops_device_info, fp64), N = 4, CANARY = 64 };
    unsigned char old[N * OLD + CANARY];
    memset(old, 0x77, sizeof old);
    for (int i = 0; i < N; i++) {
        const uint32_t size = OLD;
        memcpy(old + i * OLD, &size, sizeof size);
    }
    int32_t count = -1;
    ck_assert_int_eq(api->devices_list((struct clops_device_info *)(void *)old, N, &count),
                     CLOPS_OK);
    ck_assert_int_ge(count, 1);
    struct clops_device_info full[N];
    for (int i = 0; i < N; i++)
        full[i].struct_size = sizeof full[i];
    ck_assert_int_eq(api->devices_list(full, N, &count), CLOPS_OK);
    for (int i = 0; i < N; i++) {
        struct clops_device_info got;
        memcpy(&got, old + i * OLD, OLD);
        ck_assert_uint_eq(got.struct_size, OLD);
        if (i < count) {
            ck_assert_str_eq(got.name, full[i].name);
            ck_assert_int_eq(got.compute_units, full[i].compute_units);
        }
    }
    for (int k = 0; k < CANARY; k++)
        ck_assert_uint_eq(old[N * OLD + k], 0x77);
}
END_TEST

START_TEST(test_older_host_struct_is_not_overrun)
{
    /* A host built against a header where clops_device_info ended before `fp64`. */
    const struct clops_api *api = tu_api();
    struct clops_pool *pool = tu_pool();
    unsigned char raw[sizeof(struct clops_device_info) + 16];
    memset(raw, 0xAB, sizeof raw);
    struct clops_device_info *info = (struct clops_device_info *)raw;
    info->struct_size = offsetof(struct clops_device_info, fp64);
    ck_assert_int_eq(api->pool_device_info(pool, 0, info), CLOPS_OK);
    ck_assert_int_gt((int)strlen(info->name), 0);
    for (size_t i = offsetof(struct clops_device_info, fp64); i < sizeof raw; i++)
        ck_assert_uint_eq(raw[i], 0xAB);
    info->struct_size = 4;
    ck_assert_int_eq(api->pool_device_info(pool, 0, info), CLOPS_ERR_ABI_MISMATCH);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "struct_size"));
    struct clops_device_info full = {.struct_size = sizeof full};
    ck_assert_int_eq(api->pool_device_info(pool, 5, &full), CLOPS_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "'index' = 5"));
}
END_TEST

START_TEST(test_table_has_invoke_sized_from_abi_1_2)
{
    const struct clops_api *api = tu_api();
    ck_assert_uint_ge(api->abi_minor, 2);
    ck_assert(CLOPS_API_HAS(api, invoke_sized));
    ck_assert_ptr_nonnull(api->invoke_sized);
}
END_TEST

START_TEST(test_sized_arrays_layout_is_pinned)
{
    /* ABI 1.1's element sizes, which its hosts step by, and where ABI 1.2 appended. */
    ck_assert_uint_eq(sizeof(struct clops_param), CLOPS_PARAM_SIZE_1_1);
    ck_assert_uint_eq(sizeof(struct clops_arg), CLOPS_ARG_SIZE_1_1);
    ck_assert_uint_eq(offsetof(struct clops_op, entry), 48);
    ck_assert_uint_eq(offsetof(struct clops_op, param_size), 56);
    ck_assert_uint_eq(offsetof(struct clops_op, reserved2), 60);
    ck_assert_uint_eq(sizeof(struct clops_op), 64);
    ck_assert_uint_eq(offsetof(struct clops_api, invoke_sized),
                      offsetof(struct clops_api, pool_device_stats) + sizeof(void (*)(void)));
}
END_TEST

START_TEST(test_descriptors_state_their_param_size)
{
    /* Every descriptor publishes its element size, and stepping by it visits the parameters
     * the plugin defined (names unique, kinds in range). */
    const struct clops_api *api = tu_api();
    for (int32_t i = 0; i < api->op_count(); i++) {
        const struct clops_op *op = api->op_at(i);
        ck_assert_msg(CLOPS_OP_HAS(op, param_size), "%s: struct_size %u lacks param_size", op->name,
                      (unsigned)op->struct_size);
        ck_assert_msg(op->param_size == sizeof(struct clops_param), "%s: param_size = %u", op->name,
                      (unsigned)op->param_size);
        ck_assert_int_eq(op->reserved2, 0);
        ck_assert_uint_eq(clops_op_param_size(op), sizeof(struct clops_param));
        for (int32_t p = 0; p < op->param_count; p++) {
            const struct clops_param *param = clops_op_param(op, p);
            ck_assert_ptr_eq(param, &op->params[p]);
            ck_assert_int_ge(param->kind, CLOPS_PARAM_TENSOR_IN);
            ck_assert_int_le(param->kind, CLOPS_PARAM_STRING);
            for (int32_t q = 0; q < p; q++)
                ck_assert_str_ne(clops_op_param(op, q)->name, param->name);
        }
    }
    /* The published size walks gemm's parameters in their order. */
    const struct clops_op *gemm = api->op_find("gemm");
    static const char *const names[] = {"a",       "b",     "c",    "trans_a",
                                        "trans_b", "alpha", "beta", "precision"};
    ck_assert_int_eq(gemm->param_count, 8);
    for (int32_t p = 0; p < 8; p++)
        ck_assert_str_eq(clops_op_param(gemm, p)->name, names[p]);
}
END_TEST

/* A plugin whose struct clops_param has grown by `extra` bytes: its parameters as it would lay
 * them out, and a descriptor stating (or, for a 1.1 plugin, not stating) their size. */
struct grown_param {
    struct clops_param param;
    unsigned char extra[24];
};

START_TEST(test_op_param_steps_by_the_plugins_size)
{
    static const char *const names[] = {"first", "second", "third"};
    struct grown_param grown[3];
    memset(grown, 0xA5, sizeof grown); /* the members this header does not know */
    for (int i = 0; i < 3; i++) {
        memset(&grown[i].param, 0, sizeof grown[i].param);
        grown[i].param.name = names[i];
        grown[i].param.kind = CLOPS_PARAM_INT64;
    }
    struct clops_op op = {.struct_size = sizeof op, .param_count = 3};
    op.params = &grown[0].param;
    op.param_size = sizeof(struct grown_param);
    for (int32_t p = 0; p < 3; p++) {
        ck_assert_ptr_eq(clops_op_param(&op, p), &grown[p].param);
        ck_assert_str_eq(clops_op_param(&op, p)->name, names[p]);
    }
    /* A 1.1 plugin's descriptor ends before param_size: its elements are 40 bytes apart. */
    struct clops_param old[3];
    memset(old, 0, sizeof old);
    for (int i = 0; i < 3; i++)
        old[i].name = names[i];
    struct clops_op old_op = {.struct_size = offsetof(struct clops_op, param_size),
                              .param_count = 3,
                              .params = old,
                              .param_size = 999}; /* past its struct_size: never read */
    ck_assert_uint_eq(clops_op_param_size(&old_op), CLOPS_PARAM_SIZE_1_1);
    for (int32_t p = 0; p < 3; p++)
        ck_assert_str_eq(clops_op_param(&old_op, p)->name, names[p]);
}
END_TEST

static void *error_in_other_thread(void *arg)
{
    (void)arg;
    const struct clops_api *api = tu_api();
    /* A fresh thread has no message, whatever the main thread did. */
    int clean = strcmp(api->last_error(), "") == 0;
    api->op_find("other-thread-op");
    int own = strstr(api->last_error(), "other-thread-op") != NULL;
    return (void *)(intptr_t)(clean && own);
}

START_TEST(test_last_error_is_per_thread)
{
    const struct clops_api *api = tu_api();
    api->op_find("main-thread-op");
    pthread_t t;
    void *ok;
    ck_assert_int_eq(pthread_create(&t, NULL, error_in_other_thread, NULL), 0);
    pthread_join(t, &ok);
    ck_assert_int_eq((int)(intptr_t)ok, 1);
    ck_assert_ptr_nonnull(strstr(api->last_error(), "main-thread-op"));
}
END_TEST

struct log_capture {
    int count;
    char last[512];
};

static void capture_log(int32_t level, const char *message, void *user)
{
    struct log_capture *c = user;
    (void)level;
    c->count++;
    snprintf(c->last, sizeof c->last, "%s", message);
}

START_TEST(test_log_callback_receives_diagnostics)
{
    const struct clops_api *api = tu_api();
    struct log_capture capture = {0};
    api->set_log_callback(capture_log, &capture, CLOPS_LOG_DEBUG);
    api->op_find("logged-op");
    api->set_log_callback(NULL, NULL, CLOPS_LOG_WARNING);
    ck_assert_int_ge(capture.count, 1);
    ck_assert_ptr_nonnull(strstr(capture.last, "logged-op"));
    int before = capture.count;
    api->op_find("not-logged-op");
    ck_assert_int_eq(capture.count, before);
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_TEST(test_entry_serves_major_1_only),
        TU_TEST(test_table_has_every_member),
        TU_TEST(test_internal_symbols_are_hidden),
        TU_TEST(test_struct_layouts_are_pinned),
        TU_TEST(test_status_names_are_distinct),
        TU_TEST(test_descriptors_enumerate_and_find),
        TU_TEST(test_gemm_descriptor_lists_its_parameters),
        TU_TEST(test_op_find_unknown_names_it),
        TU_TEST(test_devices_list_finds_a_device),
        TU_TEST(test_devices_list_steps_by_the_hosts_struct_size),
        TU_TEST(test_older_host_struct_is_not_overrun),
        TU_TEST(test_last_error_is_per_thread),
        TU_TEST(test_log_callback_receives_diagnostics),
        TU_TEST(test_table_has_invoke_sized_from_abi_1_2),
        TU_TEST(test_sized_arrays_layout_is_pinned),
        TU_TEST(test_descriptors_state_their_param_size),
        TU_TEST(test_op_param_steps_by_the_plugins_size),
    };
    return tu_run_tests("abi", 0, 1, tests, TU_COUNT(tests));
}
