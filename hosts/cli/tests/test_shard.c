/* test_shard.c — sharding as pure functions (shard.c): K/N and `auto` from every launcher's
 * variables, the round-robin split covering every run once, manifest names, the device a shard
 * of a node takes; the JSON reader the manifests are read back with (json_read.c), and the
 * names they list (names.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_test.h"
#include "json_read.h"
#include "names.h"
#include "shard.h"

/* A fake environment: NAME=VALUE pairs, NULL-terminated. */
static const char *const *fake_env;

static const char *lookup(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; fake_env[i] != NULL; i++)
        if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
            return fake_env[i] + n + 1;
    return NULL;
}

static int parse_with(const char *spec, const char *const *env, struct shard *s, char *err)
{
    fake_env = env;
    return shard_parse(spec, lookup, s, err, 1024);
}

/* Asserts what `auto` reads from the environment env. */
static void expect_auto(const char *const *env, int64_t index, int64_t count, int local_rank,
                        const char *source)
{
    struct shard s;
    char err[1024];
    ck_assert_int_eq(parse_with("auto", env, &s, err), 0);
    ck_assert_int_eq(s.index, index);
    ck_assert_int_eq(s.count, count);
    ck_assert_int_eq(s.local_rank, local_rank);
    ck_assert_str_eq(s.source, source);
}

START_TEST(test_explicit_k_of_n)
{
    static const char *const none[] = {NULL};
    struct shard s;
    char err[1024];
    ck_assert_int_eq(parse_with("0/1", none, &s, err), 0);
    ck_assert_int_eq(s.index, 0);
    ck_assert_int_eq(s.count, 1);
    ck_assert_int_eq(parse_with("6/7", none, &s, err), 0);
    ck_assert_int_eq(s.index, 6);
    ck_assert_int_eq(s.count, 7);
    ck_assert_str_eq(s.source, "option");
    ck_assert_int_eq(s.local_rank, -1);
    static const char *const bad[] = {"7/7", "1/0", "-1/4", "1/", "/4", "a/4", "1/4x", "14", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        ck_assert_msg(parse_with(bad[i], none, &s, err) == -1, "'%s' accepted", bad[i]);
        ck_assert_msg(strstr(err, bad[i]) != NULL, "'%s': message '%s' does not name it", bad[i],
                      err);
    }
}
END_TEST

/* N is at most SHARD_MAX_COUNT, the most a manifest's reader accepts, from the option and from
 * a launcher alike. */
START_TEST(test_shard_count_limit)
{
    static const char *const none[] = {NULL};
    static const char *const mpi[] = {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1000001",
                                      NULL};
    struct shard s;
    char err[1024];
    ck_assert_int_eq(parse_with("999999/1000000", none, &s, err), 0);
    ck_assert_int_eq(s.count, SHARD_MAX_COUNT);
    ck_assert_int_eq(parse_with("0/1000001", none, &s, err), -1);
    ck_assert_str_eq(err, "--shard 0/1000001: 1000001 shards; at most 1000000 (as many as a sweep "
                          "can have runs)");
    ck_assert_int_eq(parse_with("auto", mpi, &s, err), -1);
    ck_assert_str_eq(err, "--shard auto: 1000001 shards; at most 1000000 (as many as a sweep can "
                          "have runs)");
}
END_TEST

START_TEST(test_auto_reads_slurm_arrays)
{
    static const char *const count[] = {"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_COUNT=4",
                                        "SLURM_ARRAY_TASK_MIN=0", "SLURM_LOCALID=1", NULL};
    expect_auto(count, 2, 4, 1, "slurm");
    struct shard s;
    char err[1024];
    /* --array=1-4: the task ids run from MIN; K from 0 all the same. */
    static const char *const min_max[] = {"SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_MIN=1",
                                          "SLURM_ARRAY_TASK_MAX=4", NULL};
    ck_assert_int_eq(parse_with("auto", min_max, &s, err), 0);
    ck_assert_int_eq(s.index, 3);
    ck_assert_int_eq(s.count, 4);
    ck_assert_int_eq(s.local_rank, -1);
    /* --array=0-6:2: ids 0, 2, 4, 6 are shards 0..3 of 4. */
    static const char *const step[] = {"SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_MIN=0",
                                       "SLURM_ARRAY_TASK_MAX=6", "SLURM_ARRAY_TASK_STEP=2", NULL};
    ck_assert_int_eq(parse_with("auto", step, &s, err), 0);
    ck_assert_int_eq(s.index, 2);
    ck_assert_int_eq(s.count, 4);
    static const char *const no_count[] = {"SLURM_ARRAY_TASK_ID=4", NULL};
    ck_assert_int_eq(parse_with("auto", no_count, &s, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "SLURM_ARRAY_TASK_COUNT"));
    static const char *const garbage[] = {"SLURM_ARRAY_TASK_ID=x1", "SLURM_ARRAY_TASK_COUNT=4",
                                          NULL};
    ck_assert_int_eq(parse_with("auto", garbage, &s, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "SLURM_ARRAY_TASK_ID=x1"));
}
END_TEST

START_TEST(test_auto_reads_mpi_launchers)
{
    static const char *const ompi[] = {"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8",
                                       "OMPI_COMM_WORLD_LOCAL_RANK=3", NULL};
    expect_auto(ompi, 3, 8, 3, "mpi");
    struct shard s;
    char err[1024];
    static const char *const pmi[] = {"PMI_RANK=1", "PMI_SIZE=2", NULL};
    ck_assert_int_eq(parse_with("auto", pmi, &s, err), 0);
    ck_assert_int_eq(s.index, 1);
    ck_assert_int_eq(s.count, 2);
    ck_assert_int_eq(s.local_rank, -1);
    static const char *const half[] = {"OMPI_COMM_WORLD_RANK=1", NULL};
    ck_assert_int_eq(parse_with("auto", half, &s, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "OMPI_COMM_WORLD_SIZE"));
    /* A Slurm array comes first: an array task that runs mpirun inside is the array's shard. */
    static const char *const both[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
                                       "SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_COUNT=5", NULL};
    ck_assert_int_eq(parse_with("auto", both, &s, err), 0);
    ck_assert_int_eq(s.count, 5);
    static const char *const none[] = {"SLURM_JOB_ID=7", NULL};
    ck_assert_int_eq(parse_with("auto", none, &s, err), -1);
    static const char *const named[] = {"SLURM_ARRAY_TASK_ID",
                                        "SLURM_ARRAY_TASK_COUNT",
                                        "SLURM_ARRAY_TASK_MIN",
                                        "SLURM_ARRAY_TASK_MAX",
                                        "OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        "PMI_RANK",
                                        "PMI_SIZE"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        ck_assert_msg(strstr(err, named[i]) != NULL, "'%s' does not name %s", err, named[i]);
}
END_TEST

/* Every run in exactly one shard, each shard's runs in order at positions 0, 1, ... */
START_TEST(test_round_robin_covers_every_run_once)
{
    for (int64_t n = 1; n <= 9; n++)
        for (int64_t total = 0; total <= 31; total++) {
            int64_t owners[32] = {0}, sum = 0;
            for (int64_t k = 0; k < n; k++) {
                struct shard s = {.index = k, .count = n};
                int64_t position = 0;
                for (int64_t run = 0; run < total; run++)
                    if (shard_owns(&s, run)) {
                        owners[run]++;
                        ck_assert_int_eq(shard_position(&s, run), position++);
                    }
                ck_assert_int_eq(shard_run_count(&s, total), position);
                sum += position;
            }
            ck_assert_int_eq(sum, total);
            for (int64_t run = 0; run < total; run++)
                ck_assert_int_eq(owners[run], 1);
        }
    ck_assert(shard_owns(NULL, 12345));
    ck_assert_int_eq(shard_run_count(NULL, 17), 17);
}
END_TEST

START_TEST(test_manifest_names_round_trip)
{
    char *path = shard_manifest_path("out/x", 12, 300);
    ck_assert_str_eq(path, "out/x/.clops/shard-12-of-300.json");
    free(path);
    int64_t k = -1, n = -1;
    ck_assert_int_eq(shard_manifest_name("shard-12-of-300.json", &k, &n), 0);
    ck_assert_int_eq(k, 12);
    ck_assert_int_eq(n, 300);
    static const char *const others[] = {
        "shard-1-of-3.json.tmp", "shard-01-of-3.json",           "shard-+1-of-3.json",
        "shard-1-of-0.json",     ".shard-1-of-3.json.12.XXXXXX", "shard-1-of-3.jsonx",
        "slurm-5_1.out"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        ck_assert_msg(shard_manifest_name(others[i], &k, &n) == -1, "'%s' taken", others[i]);
}
END_TEST

/* The device choice: local rank + GPU count + whether the pool file names devices. */
START_TEST(test_device_choice)
{
    struct shard_device d;
    for (int rank = 0; rank < 12; rank++) {
        d = shard_device_choice(rank, 4, 0);
        ck_assert_int_eq(d.kind, SHARD_DEVICE_GPU);
        ck_assert_int_eq(d.gpu_index, rank % 4);
    }
    d = shard_device_choice(5, 1, 0);
    ck_assert_int_eq(d.kind, SHARD_DEVICE_GPU);
    ck_assert_int_eq(d.gpu_index, 0);
    d = shard_device_choice(3, 8, 1); /* the pool file names its devices: obeyed */
    ck_assert_int_eq(d.kind, SHARD_DEVICE_POOL);
    ck_assert_int_eq(d.gpu_index, -1);
    d = shard_device_choice(3, 0, 0); /* no GPU: the default pool */
    ck_assert_int_eq(d.kind, SHARD_DEVICE_DEFAULT);
    d = shard_device_choice(-1, 8, 0); /* no local rank (--shard K/N): the pipeline's pool */
    ck_assert_int_eq(d.kind, SHARD_DEVICE_POOL);
    ck_assert_str_eq(shard_device_kind_name(SHARD_DEVICE_GPU), "gpu");
    char *config = shard_pool_config("cpu_fallback = false;", 3);
    ck_assert_str_eq(config,
                     "cpu_fallback = false;\ndevices = ( { type = \"gpu\"; index = 3; } );\n");
    free(config);
}
END_TEST

START_TEST(test_json_reader)
{
    static const char text[] =
        "{\"a\": [1, -2, 3.5e2, true, false, null], \"s\": \"x\\\"\\u00e9\\ud83d\\ude00\\n\",\n"
        " \"big\": 9007199254740993, \"o\": {}}";
    struct json_value v;
    char err[256];
    ck_assert_int_eq(json_parse(text, sizeof text - 1, &v, err, sizeof err), 0);
    const struct json_value *a = json_member(&v, "a");
    ck_assert_int_eq(a->type, JSON_ARRAY);
    ck_assert_int_eq(a->count, 6);
    ck_assert_int_eq(a->items[1].integer, -2);
    ck_assert(a->items[1].is_integer);
    ck_assert(!a->items[2].is_integer);
    ck_assert_double_eq(a->items[2].number, 350.0);
    ck_assert_int_eq(a->items[3].boolean, 1);
    ck_assert_int_eq(a->items[5].type, JSON_NULL);
    ck_assert_str_eq(json_member_text(&v, "s"), "x\"\xc3\xa9\xf0\x9f\x98\x80\n");
    int64_t big = 0;
    ck_assert_int_eq(json_member_integer(&v, "big", &big), 0);
    ck_assert_int_eq(big, INT64_C(9007199254740993)); /* beyond a double's 53 bits: exact */
    ck_assert_int_eq(json_member(&v, "o")->count, 0);
    ck_assert_ptr_null(json_member(&v, "missing"));
    json_value_free(&v);
    static const char *const bad[] = {"{\"a\": 1,}", "[1 2]", "\"open",       "{\"a\" 1}", "01",
                                      "[1] x",       "",      "{\"a\": tru}", "\"\\q\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(json_parse(bad[i], strlen(bad[i]), &v, err, sizeof err) == -1,
                      "'%s' accepted", bad[i]);
        ck_assert_msg(strncmp(err, "line 1: ", 8) == 0, "'%s': '%s'", bad[i], err);
        json_value_free(&v);
    }
    ck_assert_int_eq(json_parse("[\n1,\n]", 6, &v, err, sizeof err), -1);
    ck_assert_str_eq(err, "line 3: unexpected ']'");
    json_value_free(&v);
}
END_TEST

/* A forged manifest's bytes reach the terminal only escaped: a message quotes a byte that is
 * not printable ASCII as \xHH (an escape sequence, a newline, UTF-8), and stays one line. */
START_TEST(test_json_messages_escape_the_input)
{
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"[1, \x1b[2J]", "line 1: unexpected \\x1B"},
        {"\"a\\\x1b\"", "line 1: unknown escape: a backslash before \\x1B"},
        {"\"a\\\n\"", "line 1: unknown escape: a backslash before \\x0A"},
        {"\"a\\q\"", "line 1: unknown escape: a backslash before 'q'"},
        {"[\xc3\xa9]", "line 1: unexpected \\xC3"},
        {"[tr", "line 1: unexpected end of the text"},
        {"[tx]", "line 1: unexpected 'x'"},
    };
    char err[512];
    struct json_value v;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(json_parse(cases[i].text, strlen(cases[i].text), &v, err, sizeof err), -1);
        ck_assert_str_eq(err, cases[i].message);
        json_value_free(&v);
    }
}
END_TEST

#ifndef _WIN32 /* no FIFOs or /dev/zero there; host_os_win32.c tells directories and devices */
/* A FIFO would block the reader, /dev/zero never end: both refused at once, by what they are. */
START_TEST(test_json_file_only_regular)
{
    char dir[] = "/tmp/test_shard.XXXXXX", fifo[64], err[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/m.json", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    struct json_value v;
    ck_assert_int_eq(json_parse_file(fifo, &v, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "m.json: is a FIFO (named pipe), not a regular file") != NULL, "%s",
                  err);
    ck_assert_int_eq(json_parse_file("/dev/zero", &v, err, sizeof err), -1);
    ck_assert_str_eq(err, "/dev/zero: is a character device, not a regular file; only regular "
                          "files are read");
    unlink(fifo);
    rmdir(dir);
}
END_TEST
#endif

START_TEST(test_names_normalized)
{
    static const struct cli_text_case cases[] = {
        {"x.npy", "x.npy"},
        {"./x.npy", "x.npy"},
        {"sub/../x.npy", "x.npy"},
        {"a//b/./c", "a/b/c"},
        {"a/b/", "a/b"},
        {"../x", "../x"},
        {"a/../../x", "../x"},
        {"../../a/..", "../.."},
        {"/../x", "/x"},
        {"//a/./b/..", "/a"},
        {"sub/..", "."},
        {".", "."},
        {"/", "/"},
        {"a/b/../../..", ".."},
        {"x/.../y", "x/.../y"},
    };
    for (size_t i = 0; i < CLI_COUNT(cases); i++) {
        char *normal = name_normalized(cases[i].text);
        ck_assert_msg(strcmp(normal, cases[i].want) == 0, "'%s' -> '%s', expected '%s'",
                      cases[i].text, normal, cases[i].want);
        free(normal);
    }
    static const char *const under[] = {"x.npy", "a/../x", "a/b/../../x", "..x/y"};
    static const char *const outside[] = {"/x", "../x", "a/../../x", ".", "..", "./", "a/.."};
    for (size_t i = 0; i < CLI_COUNT(under); i++)
        ck_assert_msg(name_stays_under(under[i]), "'%s' refused", under[i]);
    for (size_t i = 0; i < CLI_COUNT(outside); i++)
        ck_assert_msg(!name_stays_under(outside[i]), "'%s' accepted", outside[i]);
}
END_TEST

START_TEST(test_names_utf8_and_escaped)
{
    ck_assert_int_eq(name_utf8_error("zoom/vue-\xc3\xa9t\xc3\xa9.png"), -1);
    ck_assert_int_eq(name_utf8_error("\xf0\x9f\x98\x80.npy"), -1);
    ck_assert_int_eq(name_utf8_error("x\xff.npy"), 1);
    ck_assert_int_eq(name_utf8_error("ab\xc3"), 2);           /* cut short */
    ck_assert_int_eq(name_utf8_error("\xc0\xaf"), 0);         /* overlong '/' */
    ck_assert_int_eq(name_utf8_error("a\xed\xa0\x80"), 1);    /* a surrogate */
    ck_assert_int_eq(name_utf8_error("\xf4\x90\x80\x80"), 0); /* over U+10FFFF */
    static const struct cli_text_case cases[] = {
        {"plain.npy", "plain.npy"},
        {"\x1b]0;title\x07x", "\\x1b]0;title\\x07x"},
        {"a\nb\x7f", "a\\x0ab\\x7f"},
        {"csi\xc2\x9b.npy", "csi\\xc2\\x9b.npy"},
        {"bad\xff", "bad\\xff"},
        {"back\\slash", "back\\\\slash"},
        {"\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9"},
    };
    for (size_t i = 0; i < CLI_COUNT(cases); i++) {
        char *shown = name_escaped(cases[i].text);
        ck_assert_msg(strcmp(shown, cases[i].want) == 0, "case %d: '%s', expected '%s'", (int)i,
                      shown, cases[i].want);
        free(shown);
    }
}
END_TEST

static const struct cli_test tests[] = {
    CLI_TEST(test_explicit_k_of_n),
    CLI_TEST(test_shard_count_limit),
    CLI_TEST(test_auto_reads_slurm_arrays),
    CLI_TEST(test_auto_reads_mpi_launchers),
    CLI_TEST(test_round_robin_covers_every_run_once),
    CLI_TEST(test_manifest_names_round_trip),
    CLI_TEST(test_device_choice),
    CLI_TEST(test_json_reader),
    CLI_TEST(test_json_messages_escape_the_input),
#ifndef _WIN32
    CLI_TEST(test_json_file_only_regular),
#endif
    CLI_TEST(test_names_normalized),
    CLI_TEST(test_names_utf8_and_escaped),
};
CLI_SUITE("shard", "shard", NULL, NULL, tests);
