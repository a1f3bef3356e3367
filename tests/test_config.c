/* test_config.c — the pool configuration parser: the shipped example, defaults, and that every
 * kind of mistake is an error naming file:line: and the key. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clops.h"
#include "config.h"
#include "entry.h"
#include "error.h"
#include "ops/gemm_impl.h"
#include "pool.h"
#include "testutil.h"

/* ---- Helpers ------------------------------------------------------------------------------- */

static void assert_contains(const char *text, const char *fragment)
{
    ck_assert_msg(strstr(text, fragment) != NULL, "message \"%s\" lacks \"%s\"", text, fragment);
}

/* Parses `text`, which must fail with CLOPS_ERR_CONFIG and a message that starts with
 * "<string>:<line>: " and contains `detail` (the key path and what is wrong with it). */
static void expect_config_error(const char *text, int line, const char *detail)
{
    struct pool_config cfg;
    err_clear();
    int32_t status = config_parse_string(text, &cfg);
    ck_assert_msg(status == CLOPS_ERR_CONFIG, "status %s for:\n%s", err_status_name(status), text);
    char where[32];
    snprintf(where, sizeof where, "<string>:%d: ", line);
    const char *msg = err_last();
    ck_assert_msg(strncmp(msg, where, strlen(where)) == 0,
                  "message \"%s\" does not start with \"%s\"", msg, where);
    assert_contains(msg, detail);
}

/* A writable scratch directory: the build tree under ctest, else /tmp. */
static const char *scratch_dir(void)
{
    const char *dir = getenv("CLOPS_BINARY_DIR");
    return dir != NULL && dir[0] != '\0' ? dir : "/tmp";
}

/* Writes `text` to a fresh temp file; its path goes to `path`. */
static void write_temp_config(const char *text, char *path, size_t size)
{
    snprintf(path, size, "%s/test_config_XXXXXX", scratch_dir());
    int fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp(%s): %s", path, strerror(errno));
    size_t length = strlen(text);
    ck_assert_int_eq(write(fd, text, length), (ssize_t)length);
    close(fd);
}

/* Asserts each field of a parsed device, in the order struct config_device declares them. */
static void expect_device(const struct config_device *d, int32_t type, const char *vendor,
                          int32_t platform_index, int32_t index, int32_t queues, int32_t required)
{
    ck_assert_int_eq(d->type, type);
    ck_assert_str_eq(d->vendor, vendor);
    ck_assert_int_eq(d->platform_index, platform_index);
    ck_assert_int_eq(d->index, index);
    ck_assert_int_eq(d->queues, queues);
    ck_assert_int_eq(d->required, required);
}

/* Asserts the pool-wide settings of a parsed configuration, spelt in `want` as the snprintf
 * below writes them (one string, so that a failure shows every setting). */
static void expect_pool_settings(const struct pool_config *cfg, const char *want)
{
    char got[sizeof cfg->build_options + sizeof cfg->cache_dir + sizeof cfg->kernel_dir + 128];
    snprintf(got, sizeof got,
             "cpu_fallback=%d profiling=%d build_options='%s' cache_enabled=%d cache_dir='%s' "
             "kernel_dir='%s'",
             (int)cfg->cpu_fallback, (int)cfg->profiling, cfg->build_options,
             (int)cfg->cache_enabled, cfg->cache_dir, cfg->kernel_dir);
    ck_assert_str_eq(got, want);
}

/* ---- Valid configurations ------------------------------------------------------------------ */

/* Parses configs/<name> of the source tree (CLOPS_SOURCE_DIR, set by ctest) into `cfg`,
 * its path in `path`. */
static void parse_shipped(const char *name, struct pool_config *cfg, char *path, size_t size)
{
    const char *source_dir = getenv("CLOPS_SOURCE_DIR");
    ck_assert_msg(source_dir != NULL, "CLOPS_SOURCE_DIR is not set (run through ctest)");
    snprintf(path, size, "%s/configs/%s", source_dir, name);
    int32_t status = config_parse_file(path, cfg);
    ck_assert_msg(status == CLOPS_OK, "%s: %s", err_status_name(status), err_last());
}

/* configs/two_gpus.cfg: two GPUs, gemm split over both by measured rates. */
START_TEST(test_two_gpu_example_splits_gemm_over_both)
{
    char path[1024];
    struct pool_config cfg;
    parse_shipped("two_gpus.cfg", &cfg, path, sizeof path);
    ck_assert_int_eq(cfg.device_count, 2);
    expect_device(&cfg.devices[0], CLOPS_DEVICE_GPU, "", -1, 0, 2, 1);
    expect_device(&cfg.devices[1], CLOPS_DEVICE_GPU, "", -1, 1, 2, 1);
    const struct config_op *gemm = config_find_op(&cfg, "gemm");
    ck_assert_ptr_nonnull(gemm);
    ck_assert_int_eq(gemm->split_count, 2);
    ck_assert_int_eq(gemm->split_devices[0], 0);
    ck_assert_int_eq(gemm->split_devices[1], 1);
    ck_assert_int_eq(gemm->share_count, 0);
}
END_TEST

START_TEST(test_shipped_example_parses_to_documented_values)
{
    char path[1024];
    struct pool_config cfg;
    parse_shipped("clops.cfg", &cfg, path, sizeof path);
    ck_assert_str_eq(cfg.source, path);

    ck_assert_int_eq(cfg.device_count, 2);
    expect_device(&cfg.devices[0], CLOPS_DEVICE_GPU, "", -1, 0, 2, 0);
    expect_device(&cfg.devices[1], CLOPS_DEVICE_CPU, "", -1, 0, 1, 0);

    expect_pool_settings(&cfg, "cpu_fallback=1 profiling=1 build_options='' cache_enabled=1 "
                               "cache_dir='' kernel_dir=''");
    ck_assert_int_eq(cfg.device_memory_percent, 90);

    ck_assert_int_eq(cfg.op_count, 1);
    const struct config_op *gemm = config_find_op(&cfg, "gemm");
    ck_assert_ptr_nonnull(gemm);
    ck_assert_str_eq(gemm->name, "gemm");
    ck_assert_int_eq(gemm->device, 0);
    ck_assert_str_eq(gemm->build_options, "");
}
END_TEST

START_TEST(test_defaults_mean_first_gpu_with_fallback_and_cache_on_profiling_off)
{
    struct pool_config cfg;
    memset(&cfg, 0x5a, sizeof cfg);
    config_defaults(&cfg);
    ck_assert_int_eq(cfg.device_count, 0);
    expect_pool_settings(&cfg, "cpu_fallback=1 profiling=0 build_options='' cache_enabled=1 "
                               "cache_dir='' kernel_dir=''");
    ck_assert_int_eq(cfg.op_count, 0);
    ck_assert_int_eq(cfg.device_memory_percent, 90);
    for (int i = 0; i < CONFIG_MAX_OPS; i++)
        ck_assert_int_eq(cfg.ops[i].device, -1);
    ck_assert_ptr_null(config_find_op(&cfg, "gemm"));

    /* An empty text is the defaults too, with "<string>" as the source for messages. */
    struct pool_config parsed;
    ck_assert_int_eq(config_parse_string("# nothing but a comment\n", &parsed), CLOPS_OK);
    ck_assert_str_eq(parsed.source, "<string>");
    memcpy(parsed.source, cfg.source, sizeof parsed.source);
    ck_assert_int_eq(memcmp(&parsed, &cfg, sizeof cfg), 0);
}
END_TEST

/* Kernel times come from the profiling events: kernel_times = true turns profiling on, whatever
 * profiling says; profiling alone leaves kernel_times off. */
START_TEST(test_kernel_times_turn_profiling_on)
{
    static const char *const texts[] = {
        "kernel_times = true;", "profiling = false;\nkernel_times = true;",
        "kernel_times = true;\nprofiling = false;", "profiling = true;"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct pool_config cfg;
        ck_assert_msg(config_parse_string(texts[i], &cfg) == CLOPS_OK, "%s", err_last());
        ck_assert_int_eq(cfg.profiling, 1);
        ck_assert_int_eq(cfg.kernel_times, i < 3);
    }
}
END_TEST

START_TEST(test_every_key_is_read_whatever_its_order)
{
    /* operators before devices: its device index is still checked against the devices. */
    const char *text = "operators = { gemm = { build_options = \"-DTILE=8\"; device = 1; }; };\n"
                       "devices = ( { type = \"any\"; vendor = \"pocl\"; platform = 1; index = 3;\n"
                       "              queues = 16L; required = true; },\n"
                       "            { type = \"cpu\"; } );\n"
                       "cpu_fallback = false;\n"
                       "profiling = false;\n"
                       "build_options = \"-cl-mad-enable\";\n"
                       "cache = { dir = \"relative/cache\"; enabled = false; };\n"
                       "kernel_dir = \"kernels\";\n";
    struct pool_config cfg;
    int32_t status = config_parse_string(text, &cfg);
    ck_assert_msg(status == CLOPS_OK, "%s", err_last());
    ck_assert_int_eq(cfg.device_count, 2);
    expect_device(&cfg.devices[0], 0, "pocl", 1, 3, 16, 1);
    /* A device's keys left out take their defaults. */
    expect_device(&cfg.devices[1], CLOPS_DEVICE_CPU, "", -1, 0, 2, 1);
    /* The cache directory is kept as written. */
    expect_pool_settings(&cfg, "cpu_fallback=0 profiling=0 build_options='-cl-mad-enable' "
                               "cache_enabled=0 cache_dir='relative/cache' kernel_dir='kernels'");
    const struct config_op *gemm = config_find_op(&cfg, "gemm");
    ck_assert_ptr_nonnull(gemm);
    ck_assert_int_eq(gemm->device, 1);
    ck_assert_str_eq(gemm->build_options, "-DTILE=8");
    ck_assert_ptr_null(config_find_op(&cfg, "lu"));
}
END_TEST

START_TEST(test_operator_without_device_keeps_minus_one)
{
    struct pool_config cfg;
    ck_assert_int_eq(config_parse_string("operators = { gemm = { }; };", &cfg), CLOPS_OK);
    ck_assert_int_eq(cfg.op_count, 1);
    ck_assert_int_eq(config_find_op(&cfg, "gemm")->device, -1);
}
END_TEST

START_TEST(test_strings_exactly_at_the_limit_are_accepted)
{
    char vendor[64], text[256];
    memset(vendor, 'v', sizeof vendor - 1);
    vendor[sizeof vendor - 1] = '\0';
    snprintf(text, sizeof text, "devices = ( { vendor = \"%s\"; } );", vendor);
    struct pool_config cfg;
    ck_assert_msg(config_parse_string(text, &cfg) == CLOPS_OK, "%s", err_last());
    ck_assert_str_eq(cfg.devices[0].vendor, vendor);
}
END_TEST

/* ---- Mistakes: each is CLOPS_ERR_CONFIG naming <source>:<line>: and the key --------------- */

START_TEST(test_syntax_error_reports_its_line)
{
    expect_config_error("profiling = true;\nbuild_options = ;\n", 2, "syntax error");
    expect_config_error("profiling = true;\n\n\nkernel_dir = \"unterminated;\n", 5, "syntax error");
}
END_TEST

START_TEST(test_duplicate_key_reports_its_line)
{
    expect_config_error("profiling = true;\nprofiling = false;\n", 2, "duplicate setting");
}
END_TEST

START_TEST(test_bad_device_type_lists_the_choices)
{
    struct pool_config cfg;
    const char *text = "cpu_fallback = true;\ndevices = ( { type = \"gpuu\"; } );\n";
    ck_assert_int_eq(config_parse_string(text, &cfg), CLOPS_ERR_CONFIG);
    ck_assert_str_eq(err_last(),
                     "<string>:2: devices[0].type: expected one of gpu, cpu, any, got \"gpuu\"");
    /* Device types are words, not the enum's numbers. */
    expect_config_error("devices = ( { type = 1; } );", 1, "devices[0].type: expected a string");
}
END_TEST

START_TEST(test_value_of_the_wrong_type_is_rejected)
{
    expect_config_error("profiling = 1;", 1, "profiling: expected true or false, got integer 1");
    expect_config_error("cpu_fallback = \"yes\";", 1,
                        "cpu_fallback: expected true or false, got string \"yes\"");
    expect_config_error("\ndevices = ( { queues = \"2\"; } );", 2,
                        "devices[0].queues: expected an integer in 1..16, got string \"2\"");
    expect_config_error("devices = ( { index = 1.5; } );", 1,
                        "devices[0].index: expected an integer in 0..2147483647, got float 1.5");
    expect_config_error("build_options = 5;", 1, "build_options: expected a string, got integer 5");
    expect_config_error("cache = { enabled = true;\n dir = [1, 2]; };", 2,
                        "cache.dir: expected a string, got an array");
    expect_config_error("cache = true;", 1, "cache: expected a group { ... }, got boolean true");
    /* A single device written as a group instead of a list of groups. */
    expect_config_error("devices = { type = \"gpu\"; };", 1,
                        "devices: expected a list ( { type = ...; }, ... ), got a group");
    expect_config_error("devices = ( { type = \"gpu\"; },\n \"cpu\" );", 2,
                        "devices[1]: expected a group { ... }, got string \"cpu\"");
    expect_config_error("operators = ( );", 1, "operators: expected a group");
    expect_config_error("operators = { gemm = 0; };", 1,
                        "operators.gemm: expected a group { ... }, got integer 0");
}
END_TEST

START_TEST(test_unknown_top_level_key_lists_the_expected_keys)
{
    expect_config_error("profiling = true;\n\nprofilling = false;\n", 3,
                        "unknown key 'profilling' (expected one of devices, cpu_fallback, "
                        "profiling, kernel_times, device_memory_percent, build_options, cache, "
                        "kernel_dir, operators)");
}
END_TEST

START_TEST(test_unknown_key_inside_second_device)
{
    const char *text = "devices = (\n"
                       "    { type = \"gpu\"; },\n"
                       "    { type = \"cpu\";\n"
                       "      queue = 2; }\n"
                       ");\n";
    expect_config_error(text, 4,
                        "devices[1]: unknown key 'queue' (expected one of type, vendor, platform, "
                        "index, queues, required)");
    expect_config_error("cache = { enable = false; };", 1,
                        "cache: unknown key 'enable' (expected one of enabled, dir)");
}
END_TEST

START_TEST(test_queues_outside_1_to_16_are_rejected)
{
    expect_config_error("devices = ( { queues = 0; } );", 1,
                        "devices[0].queues: expected an integer in 1..16, got 0");
    expect_config_error("devices = ( { queues = 17; } );", 1,
                        "devices[0].queues: expected an integer in 1..16, got 17");
    expect_config_error("devices = ( { queues = -2; } );", 1,
                        "devices[0].queues: expected an integer in 1..16, got -2");
}
END_TEST

START_TEST(test_negative_and_oversized_numbers_are_rejected)
{
    expect_config_error("devices = ( { platform = -1; } );", 1,
                        "devices[0].platform: expected an integer in 0..2147483647, got -1");
    expect_config_error("devices = ( { index = -3; } );", 1,
                        "devices[0].index: expected an integer in 0..2147483647, got -3");
    expect_config_error("devices = ( { index = 5000000000L; } );", 1,
                        "devices[0].index: expected an integer in 0..2147483647, got 5000000000");
    expect_config_error("operators = { gemm = { device = -1; }; };", 1,
                        "operators.gemm.device: expected an integer in 0..0, got -1");
}
END_TEST

/* libconfig 1.5 reads 4294967297 as 1 and 4294967298 as 2, both in range: refused as written,
 * at their line, before the range is checked on what is left of them. */
START_TEST(test_integers_wider_than_32_bits_are_refused_not_wrapped)
{
    expect_config_error("profiling = true;\ndevice_memory_percent = 4294967297;", 2,
                        "4294967297 does not fit in 32 bits; write 4294967297L");
    expect_config_error("devices = (\n { type = \"gpu\";\n   queues = 4294967298; } );", 3,
                        "4294967298 does not fit in 32 bits; write 4294967298L");
    /* Written as 64 bits, the value is read whole and its range is checked. */
    expect_config_error("device_memory_percent = 4294967297L;", 1,
                        "device_memory_percent: expected an integer in 1..100, got 4294967297");
}
END_TEST

START_TEST(test_operator_device_must_be_a_listed_device)
{
    expect_config_error("devices = ( { type = \"gpu\"; }, { type = \"cpu\"; } );\n"
                        "operators = { gemm = { device = 2; }; };\n",
                        2, "operators.gemm.device: expected an integer in 0..1, got 2");
    /* Without a device list the pool has one device. */
    expect_config_error("operators = { gemm = { device = 1; }; };", 1,
                        "operators.gemm.device: expected an integer in 0..0, got 1");
}
END_TEST

START_TEST(test_unknown_operator_names_the_registered_ones)
{
    expect_config_error("operators = {\n  gemmm = { device = 0; };\n};\n", 2,
                        "operators: unknown operator 'gemmm' (registered: gemm");
}
END_TEST

START_TEST(test_unknown_key_inside_an_operator)
{
    expect_config_error("operators = {\n  gemm = {\n    device = 0;\n    options = \"-DX\";\n"
                        "  };\n};\n",
                        4,
                        "operators.gemm: unknown key 'options' (expected one of device, "
                        "devices, split, split_min_ms, split_slabs, build_options)");
}
END_TEST

/* operators.<op>.devices and .split: indexes into the pool's devices, distinct; shares, one per
 * device, between 0 and 1, summing to 1; each mistake named with its line and key path. */
START_TEST(test_split_devices_and_shares_are_checked)
{
    static const char two[] =
        "devices = ( { type = \"cpu\"; }, { type = \"cpu\"; index = 1; } );\n";
    char text[512];
    snprintf(text, sizeof text, "%soperators = {\n  gemm = { devices = [0, 2]; };\n};\n", two);
    expect_config_error(text, 3,
                        "operators.gemm.devices[1]: device 2: the pool has 2 device(s), 0 .. 1 "
                        "(indexes into the devices list)");
    snprintf(text, sizeof text, "%soperators = {\n  gemm = { devices = [1, 1]; };\n};\n", two);
    expect_config_error(text, 3, "operators.gemm.devices[1]: device 1 is listed twice");
    snprintf(text, sizeof text,
             "%soperators = {\n  gemm = { devices = [0, 1];\n split = [0.7]; };\n};\n", two);
    expect_config_error(
        text, 4, "operators.gemm.split: 1 share(s) for 2 device(s) in operators.gemm.devices");
    snprintf(text, sizeof text,
             "%soperators = {\n  gemm = { devices = [0, 1];\n split = [0.7, 0.4]; };\n};\n", two);
    expect_config_error(text, 4, "operators.gemm.split: the shares sum to 1.1; expected 1");
    snprintf(text, sizeof text,
             "%soperators = {\n  gemm = { devices = [0, 1];\n split = [1.5, -0.5]; };\n};\n", two);
    expect_config_error(text, 4, "operators.gemm.split[0]: share 1.5: expected 0 to 1");
    expect_config_error("operators = { gemm = { split_min_ms = -1; }; };", 1,
                        "operators.gemm.split_min_ms: -1 ms: expected 0 or more");
    expect_config_error(
        "operators = { gemm = { devices = \"all\"; }; };", 1,
        "operators.gemm.devices: expected an array of device indexes [ 0, 1, ... ], "
        "got string \"all\"");
    /* Only operators whose calls go across devices take the keys: elsewhere they did nothing. */
    snprintf(text, sizeof text, "%soperators = {\n  transpose = {\n devices = [0, 1]; };\n};\n",
             two);
    expect_config_error(text, 4,
                        "operators.transpose.devices: transpose does not split its calls across "
                        "devices (operators that do: gemm, lu, solve)");
    expect_config_error("operators = { reduce = { split_min_ms = 5; }; };", 1,
                        "operators.reduce.split_min_ms: reduce does not split its calls across "
                        "devices (operators that do: gemm, lu, solve)");
    /* Slabs of the reduction: gemm's pieces only, 0 to 8 of them. */
    expect_config_error("operators = { lu = { split_slabs = 2; }; };", 1,
                        "operators.lu.split_slabs: lu does not compute a split call's pieces in "
                        "slabs (operators that do: gemm)");
    expect_config_error("operators = { gemm = { split_slabs = 9; }; };", 1,
                        "operators.gemm.split_slabs: 9 slabs: expected 0 to 8");
    expect_config_error("operators = { gemm = { split_slabs = -1; }; };", 1,
                        "operators.gemm.split_slabs: -1 slabs: expected 0 to 8");
    expect_config_error("operators = { gemm = {\n split_slabs = 2.5; }; };", 2,
                        "operators.gemm.split_slabs: expected an integer number of slabs, 0 to 8");
    {
        struct pool_config slabs;
        ck_assert_msg(config_parse_string("operators = { gemm = { split_slabs = 4; }; };",
                                          &slabs) == CLOPS_OK,
                      "%s", err_last());
        ck_assert_int_eq(slabs.ops[0].split_slabs, 4);
        ck_assert_msg(config_parse_string("operators = { gemm = { device = 0; }; };", &slabs) ==
                          CLOPS_OK,
                      "%s", err_last());
        ck_assert_int_eq(slabs.ops[0].split_slabs, CONFIG_SPLIT_SLABS);
    }
    snprintf(text, sizeof text,
             "%soperators = {\n  lu = { devices = [0, 1]; };\n  solve = { devices = [1, 0]; "
             "split_min_ms = 0; };\n};\n",
             two);
    struct pool_config cfg;
    ck_assert_msg(config_parse_string(text, &cfg) == CLOPS_OK, "%s", err_last());
}
END_TEST

START_TEST(test_more_than_eight_devices_are_rejected)
{
    char text[1024] = "devices = (\n";
    for (int i = 0; i < CONFIG_MAX_DEVICES + 1; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "  { index = %d; }%s\n", i,
                 i < CONFIG_MAX_DEVICES ? "," : "");
    strcat(text, ");\n");
    /* Line 1 opens the list; the ninth device is on line 10. */
    expect_config_error(text, 10, "devices[8]: too many devices: 9 listed, at most 8");
}
END_TEST

/* `text` with `value` made of `length` copies of `c` in place of its %s. */
static void format_with_long_value(char *out, size_t size, const char *text, char c, size_t length)
{
    char *value = tu_malloc(length + 1);
    memset(value, c, length);
    value[length] = '\0';
    snprintf(out, size, text, value);
    free(value);
}

START_TEST(test_strings_too_long_for_their_buffers_are_rejected)
{
    static char text[4096];
    format_with_long_value(text, sizeof text, "devices = ( { vendor = \"%s\"; } );", 'v', 64);
    expect_config_error(text, 1, "devices[0].vendor: string too long: 64 characters, at most 63");
    format_with_long_value(text, sizeof text, "\nbuild_options = \"%s\";", 'o', 512);
    expect_config_error(text, 2, "build_options: string too long: 512 characters, at most 511");
    format_with_long_value(text, sizeof text,
                           "operators = { gemm = { build_options = \"%s\"; }; };", 'o', 600);
    expect_config_error(text, 1,
                        "operators.gemm.build_options: string too long: 600 characters, at most "
                        "511");
    format_with_long_value(text, sizeof text, "kernel_dir = \"%s\";", 'k', 1024);
    expect_config_error(text, 1, "kernel_dir: string too long: 1024 characters, at most 1023");
    format_with_long_value(text, sizeof text, "cache = { dir = \"%s\"; };", 'd', 3000);
    expect_config_error(text, 1, "cache.dir: string too long: 3000 characters, at most 1023");
}
END_TEST

START_TEST(test_failed_parse_leaves_the_defaults)
{
    struct pool_config cfg, defaults;
    config_defaults(&defaults);
    const char *text = "profiling = false;\ndevices = ( { type = \"cpu\"; queues = 99; } );\n";
    ck_assert_int_eq(config_parse_string(text, &cfg), CLOPS_ERR_CONFIG);
    ck_assert_str_eq(cfg.source, "<string>");
    memcpy(defaults.source, cfg.source, sizeof cfg.source);
    ck_assert_int_eq(memcmp(&cfg, &defaults, sizeof cfg), 0);
}
END_TEST

/* ---- Files --------------------------------------------------------------------------------- */

START_TEST(test_missing_file_is_an_io_error_naming_the_path)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/no-such-dir/clops.cfg", scratch_dir());
    struct pool_config cfg;
    ck_assert_int_eq(config_parse_file(path, &cfg), CLOPS_ERR_IO);
    assert_contains(err_last(), path);
    assert_contains(err_last(), strerror(ENOENT));
}
END_TEST

START_TEST(test_directory_is_an_io_error)
{
    struct pool_config cfg;
    ck_assert_int_eq(config_parse_file(scratch_dir(), &cfg), CLOPS_ERR_IO);
    assert_contains(err_last(), scratch_dir());
    assert_contains(err_last(), strerror(EISDIR));
}
END_TEST

/* A FIFO given as the configuration is refused at once: opening it for reading would wait for a
 * writer forever. alarm() turns a hang into a failure. */
/* Windows has no FIFOs among its files (its named pipes have a namespace of their own). */
#ifndef _WIN32
START_TEST(test_fifo_is_an_io_error_without_blocking)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/test_config_fifo_%d", scratch_dir(), (int)getpid());
    unlink(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    struct pool_config cfg;
    alarm(20);
    int32_t status = config_parse_file(path, &cfg);
    alarm(0);
    unlink(path);
    ck_assert_int_eq(status, CLOPS_ERR_IO);
    assert_contains(err_last(), path);
    assert_contains(err_last(), "a FIFO, not a regular file");
}
END_TEST
#endif

START_TEST(test_error_in_a_file_names_the_file_and_line)
{
    char path[1100], where[1200];
    write_temp_config("# a pool\n"
                      "devices = (\n"
                      "    { type = \"gpu\"; required = false; },\n"
                      "    { type = \"cpu\";\n"
                      "      required = 0; }\n"
                      ");\n",
                      path, sizeof path);
    struct pool_config cfg;
    int32_t status = config_parse_file(path, &cfg);
    unlink(path);
    ck_assert_int_eq(status, CLOPS_ERR_CONFIG);
    snprintf(where, sizeof where,
             "%s:5: devices[1].required: expected true or false, got integer 0", path);
    ck_assert_str_eq(err_last(), where);
}
END_TEST

START_TEST(test_syntax_error_in_a_file_names_the_file_and_line)
{
    char path[1100], where[1200];
    write_temp_config("profiling = true;\ncache = { enabled = true; dir = };\n", path, sizeof path);
    struct pool_config cfg;
    int32_t status = config_parse_file(path, &cfg);
    unlink(path);
    ck_assert_int_eq(status, CLOPS_ERR_CONFIG);
    snprintf(where, sizeof where, "%s:2: ", path);
    ck_assert_msg(strncmp(err_last(), where, strlen(where)) == 0, "message \"%s\" lacks \"%s\"",
                  err_last(), where);
    assert_contains(err_last(), "syntax error");
}
END_TEST

START_TEST(test_integer_wider_than_32_bits_in_a_file_names_the_file_and_line)
{
    char path[1100], where[1200];
    write_temp_config("# a pool\n"
                      "devices = ( { type = \"gpu\";\n"
                      "              queues = 4294967298; } );\n"
                      "device_memory_percent = 4294967297;\n",
                      path, sizeof path);
    struct pool_config cfg;
    int32_t status = config_parse_file(path, &cfg);
    unlink(path);
    ck_assert_int_eq(status, CLOPS_ERR_CONFIG);
    snprintf(where, sizeof where, "%s:3: 4294967298 does not fit in 32 bits; write 4294967298L",
             path);
    ck_assert_str_eq(err_last(), where);
    ck_assert_int_eq(cfg.device_count, 0);
}
END_TEST

START_TEST(test_valid_file_records_its_path_as_source)
{
    char path[1100];
    write_temp_config("kernel_dir = \"../kernels\";\n", path, sizeof path);
    struct pool_config cfg;
    int32_t status = config_parse_file(path, &cfg);
    unlink(path);
    ck_assert_msg(status == CLOPS_OK, "%s", err_last());
    ck_assert_str_eq(cfg.source, path);
    ck_assert_str_eq(cfg.kernel_dir, "../kernels");
}
END_TEST

/* ---- Operator settings --------------------------------------------------------------------- */

/* The value `op_name`'s setting has after parsing `text`; -77 stands for "the device's". */
static int32_t setting_after(const char *text, const char *op_name, const char *setting)
{
    struct pool_config cfg;
    int32_t status = config_parse_string(text, &cfg);
    ck_assert_msg(status == CLOPS_OK, "%s: %s", err_status_name(status), err_last());
    return config_op_setting(config_find_op(&cfg, op_name), op_name, setting, -77);
}

START_TEST(test_operator_settings_are_read_as_typed_keys)
{
    const char *text = "operators = {\n"
                       "  gemm = { tile_m = 64; vw = 2; };\n"
                       "  reduce = { wg = 128; rows_per_group = 8; };\n"
                       "  transpose = { tile = 16; rows = 4; };\n"
                       "  lu = { nb = 16; panel_resident = false; panel_rows = 5; };\n"
                       "  solve = { panel_nb = 3; panel_groups = 2; };\n"
                       "};\n";
    ck_assert_int_eq(setting_after(text, "gemm", "tile_m"), 64);
    ck_assert_int_eq(setting_after(text, "gemm", "vw"), 2);
    ck_assert_int_eq(setting_after(text, "gemm", "tile_n"), -77);
    ck_assert_int_eq(setting_after(text, "reduce", "wg"), 128);
    ck_assert_int_eq(setting_after(text, "reduce", "rows_per_group"), 8);
    ck_assert_int_eq(setting_after(text, "transpose", "tile"), 16);
    ck_assert_int_eq(setting_after(text, "transpose", "rows"), 4);
    ck_assert_int_eq(setting_after(text, "lu", "nb"), 16);
    ck_assert_int_eq(setting_after(text, "lu", "panel_resident"), 0);
    ck_assert_int_eq(setting_after(text, "lu", "panel_rows"), 5);
    /* Each of lu, solve and lu_solve has its own. */
    ck_assert_int_eq(setting_after(text, "solve", "panel_nb"), 3);
    ck_assert_int_eq(setting_after(text, "solve", "panel_groups"), 2);
    ck_assert_int_eq(setting_after(text, "lu", "panel_nb"), -77);
    ck_assert_int_eq(setting_after(text, "lu_solve", "nb"), -77);
}
END_TEST

/* A setting left out takes its declared default, or the device's where the default is per
 * device, whether the operator has an entry or not. */
START_TEST(test_operator_settings_left_out_take_their_defaults)
{
    ck_assert_int_eq(setting_after("", "lu", "panel_rows"), 64);
    ck_assert_int_eq(setting_after("", "lu", "panel_resident"), 1);
    ck_assert_int_eq(setting_after("", "lu", "nb"), -77);
    ck_assert_int_eq(setting_after("operators = { lu = { device = 0; }; };", "lu", "panel_rows"),
                     64);
    ck_assert_int_eq(setting_after("operators = { lu = { nb = 8; }; };", "lu", "panel_resident"),
                     1);
    ck_assert_int_eq(setting_after("", "gemm", "tile_k"), -77);
    ck_assert_int_eq(setting_after("", "reduce", "vec"), -77);
    ck_assert_int_eq(setting_after("", "transpose", "rows"), -77);
    /* A name no operator declares is the caller's fallback, not an accident. */
    ck_assert_int_eq(setting_after("", "mandelbrot", "tile"), -77);
}
END_TEST

/* Every operator's settings are range-checked when the configuration is read, the same way. */
START_TEST(test_operator_settings_out_of_range_name_the_key)
{
    expect_config_error("operators = {\n  gemm = {\n    tile_m = 0;\n  };\n};\n", 3,
                        "operators.gemm.tile_m: expected an integer in 1..512, got 0");
    expect_config_error("operators = {\n  gemm = { vw = 17; };\n};\n", 2,
                        "operators.gemm.vw: expected an integer in 1..16, got 17");
    expect_config_error("operators = { reduce = { wg = 2048; }; };", 1,
                        "operators.reduce.wg: expected an integer in 1..1024, got 2048");
    expect_config_error("operators = { transpose = { rows = 65; }; };", 1,
                        "operators.transpose.rows: expected an integer in 1..64, got 65");
    expect_config_error("operators = { lu = { nb = 0; }; };", 1,
                        "operators.lu.nb: expected an integer in 1..1024, got 0");
    expect_config_error("operators = { solve = { panel_nb = 2000; }; };", 1,
                        "operators.solve.panel_nb: expected an integer in 1..1024, got 2000");
    expect_config_error("operators = {\n lu_solve = {\n panel_rows = -1; }; };", 3,
                        "operators.lu_solve.panel_rows: expected an integer in 1..1024, got -1");
}
END_TEST

START_TEST(test_operator_settings_of_the_wrong_type_name_the_key)
{
    expect_config_error("operators = { gemm = { tile_m = \"64\"; }; };", 1,
                        "operators.gemm.tile_m: expected an integer in 1..512, got string \"64\"");
    expect_config_error("operators = { reduce = { vec = 4.0; }; };", 1,
                        "operators.reduce.vec: expected an integer in 1..16, got float 4");
    expect_config_error("operators = { lu = { panel_resident = 1; }; };", 1,
                        "operators.lu.panel_resident: expected true or false, got integer 1");
    expect_config_error("operators = { transpose = { tile = true; }; };", 1,
                        "operators.transpose.tile: expected an integer in 1..64, got boolean true");
}
END_TEST

START_TEST(test_unknown_operator_setting_is_named_with_the_declared_ones)
{
    expect_config_error(
        "operators = {\n  transpose = { tiles = 8; };\n};\n", 2,
        "operators.transpose: unknown key 'tiles' (expected one of device, "
        "devices, split, split_min_ms, split_slabs, build_options) or a setting of transpose "
        "(tile, rows, vec_bytes, "
        "vec_tile, vec_rows)");
    expect_config_error(
        "operators = { lu = { nb = 8; tile_m = 4; }; };", 1,
        "operators.lu: unknown key 'tile_m' (expected one of device, "
        "devices, split, split_min_ms, split_slabs, build_options) or a setting of lu (nb, "
        "panel_nb, panel_rows, "
        "panel_resident, panel_groups, lookahead)");
    expect_config_error(
        "operators = { mandelbrot = { tile = 8; }; };", 1,
        "operators.mandelbrot: unknown key 'tile' (expected one of device, "
        "devices, split, split_min_ms, split_slabs, build_options); mandelbrot has no settings");
}
END_TEST

/* The old spellings in build_options are read as the settings, with the same checks, and are
 * taken out of the options: the rest of the options stays as written. */
START_TEST(test_old_spellings_in_build_options_become_settings)
{
    const char *text = "operators = { lu = { build_options = "
                       "\"-cl-mad-enable -DLU_NB=8  -DLU_PANEL_NB=4 -DLU_PANEL_RESIDENT=0 "
                       "-DFOO=1\"; }; gemm = { build_options = \"-DTILE_M=32\"; }; };";
    struct pool_config cfg;
    ck_assert_int_eq(config_parse_string(text, &cfg), CLOPS_OK);
    const struct config_op *lu = config_find_op(&cfg, "lu");
    ck_assert_str_eq(lu->build_options, "-cl-mad-enable -DFOO=1");
    ck_assert_int_eq(config_op_setting(lu, "lu", "nb", -77), 8);
    ck_assert_int_eq(config_op_setting(lu, "lu", "panel_nb", -77), 4);
    ck_assert_int_eq(config_op_setting(lu, "lu", "panel_resident", -77), 0);
    const struct config_op *gemm = config_find_op(&cfg, "gemm");
    ck_assert_str_eq(gemm->build_options, "");
    ck_assert_int_eq(config_op_setting(gemm, "gemm", "tile_m", -77), 32);
    char described[256];
    config_op_describe_settings(gemm, "gemm", described, sizeof described);
    ck_assert_str_eq(described, "operators.gemm.build_options -DTILE_M=32");
    /* Another operator's spelling is just an option. */
    ck_assert_int_eq(config_parse_string("operators = { gemm = { build_options = \"-DTILE=8\"; "
                                         "tile_n = 16; }; };",
                                         &cfg),
                     CLOPS_OK);
    ck_assert_str_eq(cfg.ops[0].build_options, "-DTILE=8");
    config_op_describe_settings(&cfg.ops[0], "gemm", described, sizeof described);
    ck_assert_str_eq(described, "operators.gemm.tile_n = 16");
}
END_TEST

START_TEST(test_bad_old_spellings_are_errors_naming_build_options)
{
    expect_config_error("operators = {\n  lu = { build_options = \"-DLU_NB=0\"; };\n};", 2,
                        "operators.lu.build_options: -DLU_NB=0: expected an integer in 1..1024 "
                        "(the old spelling of operators.lu.nb)");
    expect_config_error("operators = { gemm = { build_options = \"-DX -DTILE_M=abc\"; }; };", 1,
                        "operators.gemm.build_options: -DTILE_M=abc: expected an integer in "
                        "1..512");
    expect_config_error("operators = { lu = { build_options = \"-DLU_PANEL_RESIDENT=2\"; }; };", 1,
                        "-DLU_PANEL_RESIDENT=2: expected 0 or 1");
    expect_config_error("operators = { gemm = { tile_m = 64; build_options = \"-DTILE_M=32\"; "
                        "}; };",
                        1,
                        "operators.gemm.build_options: -DTILE_M=32: operators.gemm.tile_m is "
                        "set already (by its key)");
    expect_config_error("operators = { reduce = { build_options = \"-DWG=32 -DWG=64\"; }; };", 1,
                        "-DWG=64: operators.reduce.wg is set already (earlier in build_options)");
}
END_TEST

/* ---- Settings in a pool -------------------------------------------------------------------- */

/* A setting out of range refuses the pool itself, before any call, naming file:line: key. */
START_TEST(test_pool_creation_refuses_a_setting_out_of_range)
{
    struct clops_pool *pool = NULL;
    ck_assert_int_eq(tu_api()->pool_create_from_string(
                         "profiling = true;\noperators = {\n  reduce = { vec = 0; };\n};", &pool),
                     CLOPS_ERR_CONFIG);
    ck_assert_ptr_null(pool);
    const char *msg = tu_api()->last_error();
    ck_assert_msg(
        strncmp(msg, "<string>:3: operators.reduce.vec: expected an integer in 1..16",
                strlen("<string>:3: operators.reduce.vec: expected an integer in 1..16")) == 0,
        "%s", msg);
}
END_TEST

/* Settings each in range but not fitting together are refused by the call, which names them;
 * nothing is written. */
START_TEST(test_call_names_settings_that_do_not_fit_together)
{
    const struct clops_api *api = tu_api();
    struct clops_pool *pool =
        tu_pool_from_string("operators = { gemm = { tile_m = 100; wpt_m = 8; }; };");
    float x[4] = {1, 2, 3, 4}, y[4] = {0};
    struct clops_tensor a = clops_matrix(x, CLOPS_F32, 2, 2, 2, 0);
    struct clops_tensor c = clops_matrix(y, CLOPS_F32, 2, 2, 2, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
    ck_assert_int_eq(gemm(pool, &a, &a, &c, 0, 0, 1.0, 0.0), CLOPS_ERR_CONFIG);
    assert_contains(api->last_error(), "operators.gemm.tile_m = 100, operators.gemm.wpt_m = 8");
    ck_assert_float_eq(y[0], 0.0f);
    api->pool_release(pool);
}
END_TEST

/* A pool of the first CPU device alone, from the static core's table `api`. */
static struct clops_pool *cpu_pool(const struct clops_api *api)
{
    struct clops_pool *pool = NULL;
    ck_assert_int_eq(
        api->pool_create_from_string(
            "devices = ( { type = \"cpu\"; index = 0; } ); cpu_fallback = false;", &pool),
        CLOPS_OK);
    return pool;
}

/* A CPU device's GEMM tiles: the large ones (64 x 128) once they give every core a block, else
 * 32 x 32 ones, so that a small C (32 x 32) is one block of its own size instead of a corner of
 * a 64 x 128 one (8 times the work: 32 us of kernel time against 7 for a 32^3 f64 gemm under
 * PoCL on 2 cores). */
START_TEST(test_a_small_gemm_on_a_cpu_takes_tiles_of_its_size)
{
    const struct clops_api *api = entry_table(CLOPS_ABI_MAJOR);
    struct clops_pool *pool = cpu_pool(api);
    const struct pool_device *dev = pool_device_at(pool, 0);
    const int64_t units = pool_device_info(dev)->compute_units;
    const struct gemm_tiles small = gemm_tiles_for_call(dev, 32, 32);
    if (units > 1) {
        ck_assert_int_eq(small.tile_m, 32);
        ck_assert_int_eq(small.tile_n, 32);
        ck_assert(gemm_tiles_are_valid(&small));
    }
    const struct gemm_tiles large = gemm_tiles_for_call(dev, 4096, 4096);
    ck_assert_int_eq(large.tile_m, 64);
    ck_assert_int_eq(large.tile_n, 128);
    /* The rule at the boundary: as many large blocks as cores take the large tiles. */
    const int64_t n = 128 * units;
    ck_assert_int_eq(gemm_tiles_for_call(dev, 64, n).tile_n, 128);
    api->pool_release(pool);
}
END_TEST

/* A synchronous call on a CPU device looks for its end before it waits (pool_work_poll): the
 * first call looks once; once a look runs out (a 512^3 f64 gemm's: milliseconds against 0.1,
 * or a small call's on a slow build such as a sanitized one) the device sits the next
 * POOL_POLL_REST calls out, which do not look, and then looks again. */
START_TEST(test_a_cpu_device_looks_for_a_small_calls_end_and_backs_off)
{
    const struct clops_api *api = entry_table(CLOPS_ABI_MAJOR);
    struct clops_pool *pool = cpu_pool(api);
    const struct pool_device *dev = pool_device_at(pool, 0);
    clops_gemm_fn gemm = (clops_gemm_fn)api->op_find("gemm")->entry;
    enum { BIG = 512 };
    double *a = calloc(BIG * BIG, sizeof *a), *c = calloc(BIG * BIG, sizeof *c);
    ck_assert(a != NULL && c != NULL);
    for (int i = 0; i < BIG; i++)
        a[i * BIG + i] = 2.0;
    struct clops_tensor s4 = clops_matrix(a, CLOPS_F64, 4, 4, BIG, 0);
    struct clops_tensor c4 = clops_matrix(c, CLOPS_F64, 4, 4, BIG, 0);
    struct clops_tensor ta = clops_matrix(a, CLOPS_F64, BIG, BIG, BIG, 0);
    struct clops_tensor tc = clops_matrix(c, CLOPS_F64, BIG, BIG, BIG, 0);
    int64_t ends = 0, timeouts = 0;
    ck_assert_int_eq(gemm(pool, &s4, &s4, &c4, 0, 0, 1.0, 0.0), CLOPS_OK);
    pool_device_poll_counts(dev, &ends, &timeouts);
    ck_assert_int_eq(ends + timeouts, 1); /* it looked once */
    ck_assert(c[0] == 4.0 && c[1] == 0.0);
    if (timeouts == 0) { /* the look found the end: a long call's look runs out */
        ck_assert_int_eq(gemm(pool, &ta, &ta, &tc, 0, 0, 1.0, 0.0), CLOPS_OK);
        ck_assert(c[0] == 4.0 && c[BIG * BIG - 1] == 4.0);
        pool_device_poll_counts(dev, &ends, &timeouts);
        ck_assert_int_eq(timeouts, 1);
    }
    /* Sitting out: a long call and small ones do not look. */
    ck_assert_int_eq(gemm(pool, &ta, &ta, &tc, 0, 0, 1.0, 0.0), CLOPS_OK);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(gemm(pool, &s4, &s4, &c4, 0, 0, 1.0, 0.0), CLOPS_OK);
    int64_t ends2 = 0, timeouts2 = 0;
    pool_device_poll_counts(dev, &ends2, &timeouts2);
    ck_assert_int_eq(ends2, ends);
    ck_assert_int_eq(timeouts2, timeouts);
    /* After POOL_POLL_REST calls it looks again. */
    for (int i = 0; i < POOL_POLL_REST; i++)
        ck_assert_int_eq(gemm(pool, &s4, &s4, &c4, 0, 0, 1.0, 0.0), CLOPS_OK);
    pool_device_poll_counts(dev, &ends2, &timeouts2);
    ck_assert_int_gt(ends2 + timeouts2, ends + timeouts);
    ck_assert(c[0] == 4.0 && c[1] == 0.0);
    free(a);
    free(c);
    api->pool_release(pool);
}
END_TEST

/* The log lines of kernel_times for lu's resident panel kernel: "lu: kernel NAME: N launches". */
static void count_panel_launches(int32_t level, const char *message, void *user)
{
    char name[64];
    int launches = 0;
    if (level == CLOPS_LOG_INFO &&
        sscanf(message, "lu: kernel %63[^:]: %d launches", name, &launches) == 2 &&
        strcmp(name, "lu_panel_resident") == 0)
        *(int *)user += launches;
}

/* Resident panel launches of an LU of a 100 x 100 f32 matrix on a pool made from `config`. */
static int panel_launches_with(const char *config)
{
    const struct clops_api *api = tu_api();
    char text[512];
    snprintf(text, sizeof text, "kernel_times = true; profiling = true;\n%s", config);
    struct clops_pool *pool = tu_pool_from_string(text);
    enum { N = 100 };
    float *a = malloc(sizeof(float) * N * N);
    tu_fill_f32(a, N * N);
    int32_t ipiv[N], info = -1;
    struct clops_tensor ta = clops_matrix(a, CLOPS_F32, N, N, N, 0);
    struct clops_tensor tp = {
        .data = ipiv, .dtype = CLOPS_I32, .rank = 1, .shape = {N}, .strides = {1}};
    struct clops_tensor ti = {
        .data = &info, .dtype = CLOPS_I32, .rank = 1, .shape = {1}, .strides = {1}};
    int launches = 0;
    api->set_log_callback(count_panel_launches, &launches, CLOPS_LOG_INFO);
    int32_t status = ((clops_lu_fn)api->op_find("lu")->entry)(pool, &ta, &tp, &ti, 0);
    api->set_log_callback(NULL, NULL, CLOPS_LOG_ERROR);
    ck_assert_msg(status == CLOPS_OK, "%s", api->last_error());
    ck_assert_int_eq(info, 0);
    free(a);
    api->pool_release(pool);
    return launches;
}

/* A configured panel_nb is the width of lu's panels: 4 gives 25 resident panel launches for 100
 * columns (the default, 8 on a CPU device or 64 on a GPU, gives 13 or 2), by its key or by its
 * old spelling; panel_resident = false gives none. */
START_TEST(test_configured_lu_settings_shape_its_launches)
{
    tu_seed(11);
    ck_assert_int_eq(panel_launches_with("operators = { lu = { panel_nb = 4; }; };"), 25);
    ck_assert_int_eq(
        panel_launches_with("operators = { lu = { build_options = \"-DLU_PANEL_NB=4\"; }; };"), 25);
    ck_assert_int_eq(panel_launches_with("operators = { lu = { panel_resident = false; }; };"), 0);
    const int by_default = panel_launches_with("");
    ck_assert_msg(by_default == 13 || by_default == 2, "%d launches", by_default);
}
END_TEST

/* Whether `n` bytes at `text` hold `needle` (memmem is GNU's). */
static int holds(const char *text, size_t n, const char *needle)
{
    const size_t k = strlen(needle);
    for (size_t i = 0; k <= n && i <= n - k; i++)
        if (memcmp(text + i, needle, k) == 0)
            return 1;
    return 0;
}

/* Whether a file under `dir` holds `a` and (when not NULL) not `b`. */
static int some_file_holds(const char *dir, const char *a, const char *b)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int found = 0;
    for (struct dirent *e = readdir(d); e != NULL && !found; e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            continue;
        static char content[1 << 22];
        size_t n = fread(content, 1, sizeof content, f);
        fclose(f);
        found = holds(content, n, a) && (b == NULL || !holds(content, n, b));
    }
    closedir(d);
    return found;
}

/* LU's tunings (nb, panel_nb, ...) shape its launches and no kernel reads them: their old
 * spellings in build_options no longer reach the compiler or the program cache's key, which
 * keeps the rest of the options. */
START_TEST(test_lu_tunings_stay_out_of_build_options_and_cache_key)
{
    char dir[1024], config[1400];
    snprintf(dir, sizeof dir, "%s/test_config_cache_XXXXXX", scratch_dir());
    ck_assert_ptr_nonnull(tu_make_temp_dir(dir));
    snprintf(config, sizeof config,
             "cache = { dir = \"%s\"; };\noperators = { lu = { build_options = \"-DLU_NB=8 "
             "-DCLOPS_TEST_MARK=1 -DLU_PANEL_NB=4 -DLU_PANEL_ROWS=5\"; }; };",
             dir);
    ck_assert_int_eq(panel_launches_with(config), 25); /* still read: panel_nb = 4 */
    ck_assert_msg(some_file_holds(dir, "|source=lu:", NULL), "no cache entry of lu in %s", dir);
    ck_assert_msg(some_file_holds(dir, "-DCLOPS_TEST_MARK=1", "LU_"),
                  "lu's cache key lacks the build options, or holds an LU_ tuning");
}
END_TEST

int main(void)
{
    const struct tu_test tests[] = {
        TU_CASE("valid"),
        TU_TEST(test_shipped_example_parses_to_documented_values),
        TU_TEST(test_defaults_mean_first_gpu_with_fallback_and_cache_on_profiling_off),
        TU_TEST(test_kernel_times_turn_profiling_on),
        TU_TEST(test_every_key_is_read_whatever_its_order),
        TU_TEST(test_operator_without_device_keeps_minus_one),
        TU_TEST(test_strings_exactly_at_the_limit_are_accepted),
        TU_CASE("mistakes"),
        TU_TEST(test_syntax_error_reports_its_line),
        TU_TEST(test_duplicate_key_reports_its_line),
        TU_TEST(test_bad_device_type_lists_the_choices),
        TU_TEST(test_value_of_the_wrong_type_is_rejected),
        TU_TEST(test_unknown_top_level_key_lists_the_expected_keys),
        TU_TEST(test_unknown_key_inside_second_device),
        TU_TEST(test_queues_outside_1_to_16_are_rejected),
        TU_TEST(test_negative_and_oversized_numbers_are_rejected),
        TU_TEST(test_integers_wider_than_32_bits_are_refused_not_wrapped),
        TU_TEST(test_operator_device_must_be_a_listed_device),
        TU_TEST(test_unknown_operator_names_the_registered_ones),
        TU_TEST(test_unknown_key_inside_an_operator),
        TU_TEST(test_split_devices_and_shares_are_checked),
        TU_TEST(test_two_gpu_example_splits_gemm_over_both),
        TU_TEST(test_more_than_eight_devices_are_rejected),
        TU_TEST(test_strings_too_long_for_their_buffers_are_rejected),
        TU_TEST(test_failed_parse_leaves_the_defaults),
        TU_CASE("files"),
        TU_TEST(test_missing_file_is_an_io_error_naming_the_path),
        TU_TEST(test_directory_is_an_io_error),
#ifndef _WIN32
        TU_TEST(test_fifo_is_an_io_error_without_blocking),
#endif
        TU_TEST(test_error_in_a_file_names_the_file_and_line),
        TU_TEST(test_syntax_error_in_a_file_names_the_file_and_line),
        TU_TEST(test_integer_wider_than_32_bits_in_a_file_names_the_file_and_line),
        TU_TEST(test_valid_file_records_its_path_as_source),
        TU_CASE("settings"),
        TU_TEST(test_operator_settings_are_read_as_typed_keys),
        TU_TEST(test_operator_settings_left_out_take_their_defaults),
        TU_TEST(test_operator_settings_out_of_range_name_the_key),
        TU_TEST(test_operator_settings_of_the_wrong_type_name_the_key),
        TU_TEST(test_unknown_operator_setting_is_named_with_the_declared_ones),
        TU_TEST(test_old_spellings_in_build_options_become_settings),
        TU_TEST(test_bad_old_spellings_are_errors_naming_build_options),
        TU_CASE("in_a_pool"),
        TU_TEST(test_pool_creation_refuses_a_setting_out_of_range),
        TU_TEST(test_call_names_settings_that_do_not_fit_together),
        TU_TEST(test_a_small_gemm_on_a_cpu_takes_tiles_of_its_size),
        TU_TEST(test_a_cpu_device_looks_for_a_small_calls_end_and_backs_off),
        TU_TEST(test_configured_lu_settings_shape_its_launches),
        TU_TEST(test_lu_tunings_stay_out_of_build_options_and_cache_key),
    };
    return tu_run_tests("config", 0, 1, tests, TU_COUNT(tests));
}
