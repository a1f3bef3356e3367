/* test_pipeline_progress.c — the progress model of `clops run` on its own (no device, no
 * terminal): the fraction of the whole work done and the time the rest should take, from a
 * sweep's runs and steps and the calls measured so far; and how durations read. */
#include <math.h>
#include <stdlib.h>

#include "cli_test.h"
#include "pipeline_progress.h"

/* A sweep of 2 runs over n = 100 and 200, each: gemm (3 calls of 2n^3 flops), transpose (1 call
 * of 16 n^2 bytes), a step of an operator whose work is unknown (2 calls); slots 0, 1, 2. */
static struct progress_model model;

static void make_sweep(void)
{
    model = (struct progress_model){0};
    for (int run = 0; run < 2; run++) {
        double n = run == 0 ? 100.0 : 200.0;
        progress_model_add_run(&model);
        progress_model_add(&model, 0, "GFLOP/s", 2.0 * n * n * n, 3);
        progress_model_add(&model, 1, "GB/s", 16.0 * n * n, 1);
        progress_model_add(&model, 2, NULL, 0.0, 2);
    }
}

static void free_sweep(void)
{
    progress_model_free(&model);
}

static void assert_near(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want)), "%s: %.12g, expected %.12g",
                  what, got, want);
}

START_TEST(test_items_are_numbered_run_by_run)
{
    ck_assert_int_eq(model.count, 6);
    ck_assert_int_eq(model.run_count, 2);
    ck_assert_int_eq(progress_model_item(&model, 0, 0), 0);
    ck_assert_int_eq(progress_model_item(&model, 0, 2), 2);
    ck_assert_int_eq(progress_model_item(&model, 1, 0), 3);
    ck_assert_int_eq(progress_model_item(&model, 1, 2), 5);
    ck_assert_int_eq(progress_model_item(&model, 1, 7), -1);
    /* Slots in any order: a step's checks (slot 4 here) after it. */
    struct progress_model m = {0};
    progress_model_add_run(&m);
    progress_model_add(&m, 0, NULL, 0.0, 1);
    progress_model_add(&m, 4, NULL, 0.0, 1);
    progress_model_add(&m, 1, NULL, 0.0, 1);
    ck_assert_int_eq(progress_model_item(&m, 0, 4), 1);
    ck_assert_int_eq(progress_model_item(&m, 0, 1), 2);
    progress_model_free(&m);
}
END_TEST

/* Nothing measured (the first call compiles, say): the calls count alike, and no ETA. */
START_TEST(test_before_any_measurement_calls_count_and_no_eta)
{
    struct progress_estimate e = progress_model_estimate(&model, 0, 5000.0, -1.0);
    assert_near(e.fraction, 0.0, "at the start");
    ck_assert(e.eta_ms < 0.0);
    e = progress_model_estimate(&model, 1, 0.0, -1.0); /* gemm's 3 calls of 12 over, unmeasured */
    assert_near(e.fraction, 3.0 / 12.0, "after run 0's gemm, unmeasured");
    ck_assert(e.eta_ms < 0.0);
}
END_TEST

/* The same step in the next run is expected to take its time scaled by the work: run 1's gemm
 * does 8 times the flops, its transpose 4 times the bytes. */
START_TEST(test_a_step_is_expected_to_scale_with_its_work)
{
    for (int call = 0; call < 3; call++)
        progress_model_call_done(&model, 0, 10.0);
    progress_model_call_done(&model, 1, 2.0);
    progress_model_call_done(&model, 2, 1.0);
    progress_model_call_done(&model, 2, 3.0);
    /* Run 1 is next: gemm 3 x 80, transpose 8, the unknown step 2 x 2 (its own mean). */
    double done = 30.0 + 2.0 + 4.0, rest = 240.0 + 8.0 + 4.0;
    struct progress_estimate e = progress_model_estimate(&model, 3, 0.0, -1.0);
    assert_near(e.eta_ms, rest, "ETA at run 1");
    assert_near(e.fraction, done / (done + rest), "fraction at run 1");
    /* 50 ms into run 1's first gemm call: 30 of it left, and two calls more. */
    e = progress_model_estimate(&model, 3, 50.0, -1.0);
    assert_near(e.eta_ms, 30.0 + 160.0 + 8.0 + 4.0, "ETA during run 1's gemm");
    assert_near(e.fraction, (done + 50.0) / (done + 50.0 + e.eta_ms), "fraction during it");
}
END_TEST

/* A call that runs past its estimate leaves the rest as it was, and the bar short of full. */
START_TEST(test_an_overrunning_call_keeps_the_rest)
{
    progress_model_call_done(&model, 0, 10.0);
    struct progress_estimate e = progress_model_estimate(&model, 0, 500.0, -1.0);
    /* The running call is past its 10 ms: nothing of it is left, then gemm's third call (10);
     * the transpose (bytes: no rate measured) and the unknown step at the mean of every call
     * (10); run 1's gemm at 8 times run 0's, its other steps at the mean. */
    double rest = 10.0 + 10.0 + 2 * 10.0 + 240.0 + 10.0 + 2 * 10.0;
    assert_near(e.eta_ms, rest, "ETA with the second gemm call overrunning");
    ck_assert(e.fraction < 1.0 && e.fraction > 0.0);
}
END_TEST

/* A step not measured yet is expected at its unit's measured rate: one gemm of run 1 whose
 * flops are known from run 0's step 0 is measured, and a new GFLOP/s step follows. */
START_TEST(test_an_unmeasured_step_takes_its_units_rate)
{
    struct progress_model m = {0};
    progress_model_add_run(&m);
    progress_model_add(&m, 0, "GFLOP/s", 1e6, 1);  /* measured: 4 ms per 1e6 flops */
    progress_model_add(&m, 1, "GFLOP/s", 5e6, 2);  /* expected: 20 ms a call */
    progress_model_add(&m, 2, "Mpixel/s", 7.0, 1); /* no rate for pixels: the mean, 4 ms */
    progress_model_call_done(&m, 0, 4.0);
    struct progress_estimate e = progress_model_estimate(&m, 1, 0.0, -1.0);
    assert_near(e.eta_ms, 2 * 20.0 + 4.0, "ETA from the unit's rate");
    assert_near(e.fraction, 4.0 / (4.0 + 44.0), "fraction from the unit's rate");
    progress_model_free(&m);
}
END_TEST

/* The running call's fraction as the library reports it (event_query's progress) moves the
 * bar within the call: before any measurement as that part of a call; with the step's own calls
 * measured, that fraction of their time is left; with none of its own, the call's own pace so
 * far gives what is left. */
START_TEST(test_a_calls_reported_fraction_moves_the_bar)
{
    struct progress_estimate e = progress_model_estimate(&model, 0, 100.0, 0.5);
    assert_near(e.fraction, 0.5 / 12.0, "half of the first of 12 calls, nothing measured");
    ck_assert(e.eta_ms < 0.0);
    progress_model_call_done(&model, 0, 10.0);
    e = progress_model_estimate(&model, 0, 2.0, 0.75);
    /* A quarter of 10 ms left of the running call, then the rest as without a fraction. */
    double rest = 2.5 + 10.0 + 10.0 + 2 * 10.0 + 240.0 + 10.0 + 2 * 10.0;
    assert_near(e.eta_ms, rest, "ETA with the second gemm call 3/4 done");
    assert_near(e.fraction, 12.0 / (12.0 + rest), "fraction with the second gemm call 3/4 done");
    progress_model_call_done(&model, 0, 10.0);
    progress_model_call_done(&model, 0, 10.0);
    e = progress_model_estimate(&model, 1, 30.0, 0.25);
    /* The transpose, a quarter done in 30 ms, has 90 ms left; the others at the mean (10 ms)
     * but run 1's gemm (8 times run 0's). */
    rest = 90.0 + 2 * 10.0 + 3 * 80.0 + 10.0 + 2 * 10.0;
    assert_near(e.eta_ms, rest, "ETA from the transpose's own pace");
    assert_near(e.fraction, 60.0 / (60.0 + rest), "fraction from the transpose's own pace");
}
END_TEST

/* A run that stopped at a failed step: its remaining steps are over, not waited for. */
START_TEST(test_steps_after_a_failure_are_skipped)
{
    progress_model_call_done(&model, 0, 10.0);
    struct progress_estimate e = progress_model_estimate(&model, 3, 0.0, -1.0);
    double rest = 3 * 80.0 + 10.0 + 2 * 10.0;
    assert_near(e.eta_ms, rest, "ETA after run 0 failed");
    assert_near(e.fraction, 10.0 / (10.0 + rest), "fraction after run 0 failed");
    e = progress_model_estimate(&model, model.count, 0.0, -1.0);
    assert_near(e.fraction, 1.0, "all over");
    assert_near(e.eta_ms, 0.0, "nothing left");
}
END_TEST

START_TEST(test_durations_read_in_their_unit)
{
    static const struct cli_number_case cases[] = {
        {0.4, "0 ms"},
        {850.0, "850 ms"},
        {12345.0, "12.3 s"},
        {245000.0, "4 min 05 s"},
        {7380000.0, "2 h 03 min"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[32];
        progress_format_duration(cases[i].number, text, sizeof text);
        ck_assert_str_eq(text, cases[i].want);
    }
}
END_TEST

static const struct cli_test tests[] = {
    CLI_TEST(test_items_are_numbered_run_by_run),
    CLI_TEST(test_before_any_measurement_calls_count_and_no_eta),
    CLI_TEST(test_a_step_is_expected_to_scale_with_its_work),
    CLI_TEST(test_an_overrunning_call_keeps_the_rest),
    CLI_TEST(test_an_unmeasured_step_takes_its_units_rate),
    CLI_TEST(test_a_calls_reported_fraction_moves_the_bar),
    CLI_TEST(test_steps_after_a_failure_are_skipped),
    CLI_TEST(test_durations_read_in_their_unit),
};
CLI_SUITE("pipeline_progress", "model", make_sweep, free_sweep, tests);
