/* smoke.c — the Windows cross build's parts at work under Wine: OpenCL through the import
 * library (a kernel's numbers, a build log), libconfig's DLL, Check without fork and its C99
 * messages, LAPACKE's factors, a PNG written and read back through libpng and zlib.
 *   smoke                 runs the Check suite
 *   smoke --list          prints the OpenCL platforms and devices that Wine shows
 *   smoke --check-printf  fails a Check test on purpose and compares its message
 *   smoke --exit N        returns N (wine-run must hand it back) */
#include <CL/cl.h>
#include <check.h>
#include <lapacke.h>
#include <libconfig.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <zlib.h>

static const char *cl_status_name(cl_int status)
{
    switch (status) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    default: return "another OpenCL status";
    }
}

#define ck_assert_cl(call)                                                                         \
    do {                                                                                           \
        cl_int status_ = (call);                                                                   \
        ck_assert_msg(status_ == CL_SUCCESS, "%s: %s (%d)", #call, cl_status_name(status_),        \
                      status_);                                                                    \
    } while (0)

/* The first device of the first platform that has one. */
static cl_device_id first_device(void)
{
    cl_platform_id platforms[8];
    cl_uint n_platforms = 0;
    ck_assert_cl(clGetPlatformIDs(8, platforms, &n_platforms));
    for (cl_uint p = 0; p < n_platforms && p < 8; p++) {
        cl_device_id device;
        cl_uint n_devices = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, &n_devices) ==
                CL_SUCCESS &&
            n_devices > 0)
            return device;
    }
    ck_abort_msg("no OpenCL device on %u platforms", n_platforms);
    return NULL;
}

static const char axpy_source[] =
    "__kernel void axpy(float x, __global const float *a, __global const float *b,\n"
    "                   __global float *c, uint n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) c[i] = x * a[i] + b[i];\n"
    "}\n";

/* c = 3a + b on 1237 elements (not a multiple of any work-group size), a = i, b = 2i + 1: every
 * result 5i + 1 is exact in float, so the comparison is exact too. */
START_TEST(test_kernel_computes_axpy_exactly)
{
    enum { n = 1237 };
    static float a[n], b[n], c[n];
    for (int i = 0; i < n; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i + 1);
        c[i] = -1.0f;
    }
    cl_device_id device = first_device();
    cl_int status;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &status);
    ck_assert_cl(status);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &status);
    ck_assert_cl(status);
    const char *source = axpy_source;
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &status);
    ck_assert_cl(status);
    ck_assert_cl(clBuildProgram(program, 1, &device, "", NULL, NULL));
    cl_kernel kernel = clCreateKernel(program, "axpy", &status);
    ck_assert_cl(status);
    cl_mem buffers[3];
    float *hosts[3] = {a, b, c};
    for (int k = 0; k < 3; k++) {
        buffers[k] = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a,
                                    hosts[k], &status);
        ck_assert_cl(status);
    }
    cl_float x = 3.0f;
    cl_uint count = n;
    ck_assert_cl(clSetKernelArg(kernel, 0, sizeof x, &x));
    for (int k = 0; k < 3; k++)
        ck_assert_cl(clSetKernelArg(kernel, (cl_uint)(k + 1), sizeof(cl_mem), &buffers[k]));
    ck_assert_cl(clSetKernelArg(kernel, 4, sizeof count, &count));
    size_t global = (n + 63) / 64 * 64;
    ck_assert_cl(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
    ck_assert_cl(clEnqueueReadBuffer(queue, buffers[2], CL_TRUE, 0, sizeof c, c, 0, NULL, NULL));
    for (int i = 0; i < n; i++)
        ck_assert_msg(c[i] == (float)(5 * i + 1), "c[%d] = %g, expected %d", i, c[i], 5 * i + 1);
    for (int k = 0; k < 3; k++)
        clReleaseMemObject(buffers[k]);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
}
END_TEST

/* A failed build reports CL_BUILD_PROGRAM_FAILURE and a log naming the undeclared identifier:
 * clops shows its users that log. */
START_TEST(test_failed_build_reports_status_and_log)
{
    cl_device_id device = first_device();
    cl_int status;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &status);
    ck_assert_cl(status);
    const char *source = "__kernel void broken(__global int *p) { p[0] = not_declared; }\n";
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &status);
    ck_assert_cl(status);
    status = clBuildProgram(program, 1, &device, "", NULL, NULL);
    ck_assert_str_eq(cl_status_name(status), "CL_BUILD_PROGRAM_FAILURE");
    char log[8192] = "";
    ck_assert_cl(
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL));
    ck_assert_msg(strstr(log, "not_declared") != NULL, "build log: %s", log);
    clReleaseProgram(program);
    clReleaseContext(context);
}
END_TEST

START_TEST(test_libconfig_reads_values_from_text)
{
    config_t config;
    config_init(&config);
    ck_assert_msg(config_read_string(&config, "pool: { queues = 3; scale = 2.5; name = \"cpu\"; "
                                              "sizes = [ 7, 11, 13 ]; };") == CONFIG_TRUE,
                  "line %d: %s", config_error_line(&config), config_error_text(&config));
    int queues = 0;
    double scale = 0;
    const char *name = NULL;
    ck_assert_int_eq(config_lookup_int(&config, "pool.queues", &queues), CONFIG_TRUE);
    ck_assert_int_eq(queues, 3);
    ck_assert_int_eq(config_lookup_float(&config, "pool.scale", &scale), CONFIG_TRUE);
    ck_assert_double_eq(scale, 2.5);
    ck_assert_int_eq(config_lookup_string(&config, "pool.name", &name), CONFIG_TRUE);
    ck_assert_str_eq(name, "cpu");
    config_setting_t *sizes = config_lookup(&config, "pool.sizes");
    ck_assert_ptr_nonnull(sizes);
    ck_assert_int_eq(config_setting_length(sizes), 3);
    ck_assert_int_eq(config_setting_get_int_elem(sizes, 2), 13);
    ck_assert_int_eq(config_read_string(&config, "pool: { queues = ; };"), CONFIG_FALSE);
    ck_assert_int_eq(config_error_line(&config), 1);
    config_destroy(&config);
}
END_TEST

/* Check was built without fork: each test runs in this process. */
static DWORD main_process_id;
START_TEST(test_check_runs_tests_in_this_process)
{
    ck_assert_uint_eq(GetCurrentProcessId(), main_process_id);
}
END_TEST

/* P A = L U of a 3x3 matrix whose factors are exact in binary, with both pivots away from the
 * diagonal: A's rows are those of L U in the order 3, 1, 2, so getrf swaps rows 1 and 2 (ipiv[0] =
 * 2), then rows 2 and 3 (ipiv[1] = 3), and L U, written over A, must come out exactly. Row-major
 * goes through LAPACKE's transposition as well. */
START_TEST(test_lapacke_dgetrf_gives_known_pivots_and_factors)
{
    double a[9] = {2, 0.75, 5.75, 8, 7, 9, 4, 1.5, 5.5};
    const double lu[9] = {8, 7, 9, 0.5, -2, 1, 0.25, 0.5, 3};
    const lapack_int expected_pivots[3] = {2, 3, 3};
    lapack_int pivots[3] = {0, 0, 0};
    ck_assert_int_eq(LAPACKE_dgetrf(LAPACK_ROW_MAJOR, 3, 3, a, 3, pivots), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pivots[i], expected_pivots[i]);
    for (int i = 0; i < 9; i++)
        ck_assert_msg(a[i] == lu[i], "LU[%d][%d] = %.17g, expected %g", i / 3, i % 3, a[i], lu[i]);
}
END_TEST

/* The same matrix in single precision, column-major, through sgesv (sgetrf then sgetrs): x is
 * dyadic, every step of the solve exact, so x comes back exactly. A singular matrix reports the
 * zero pivot's position (info = 2). */
START_TEST(test_lapacke_sgesv_solves_exactly_and_reports_singular)
{
    float a[9] = {2, 8, 4, 0.75f, 7, 1.5f, 5.75f, 9, 5.5f};
    const float x[3] = {1, -2, 0.5f};
    float b[3];
    for (int i = 0; i < 3; i++)
        b[i] = a[i] * x[0] + a[3 + i] * x[1] + a[6 + i] * x[2];
    lapack_int pivots[3];
    ck_assert_int_eq(LAPACKE_sgesv(LAPACK_COL_MAJOR, 3, 1, a, 3, pivots, b, 3), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(b[i] == x[i], "x[%d] = %.9g, expected %g", i, b[i], x[i]);
    float singular[4] = {1, 2, 2, 4};
    float rhs[2] = {1, 1};
    ck_assert_int_eq(LAPACKE_sgesv(LAPACK_COL_MAJOR, 2, 1, singular, 2, pivots, rhs, 2), 2);
}
END_TEST

/* A 37x23 RGBA image (odd sizes), every byte a function of its position, written to a file with
 * libpng's simplified API (deflate through zlib) and read back: the same size, format and every
 * byte. */
START_TEST(test_png_written_and_read_back_has_the_same_pixels)
{
    enum { width = 37, height = 23, channels = 4 };
    static uint8_t pixels[width * height * channels], read_back[width * height * channels];
    for (int i = 0; i < width * height * channels; i++)
        pixels[i] = (uint8_t)(i * 7 + i / (width * channels) * 13);
    const char *path = "smoke-png-round-trip.png";
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = PNG_FORMAT_RGBA;
    ck_assert_msg(png_image_write_to_file(&image, path, 0, pixels, 0, NULL) != 0, "write: %s",
                  image.message);
    png_image_free(&image);
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    ck_assert_msg(png_image_begin_read_from_file(&image, path) != 0, "read: %s", image.message);
    ck_assert_uint_eq(image.width, width);
    ck_assert_uint_eq(image.height, height);
    ck_assert_uint_eq(image.format, PNG_FORMAT_RGBA);
    ck_assert_msg(png_image_finish_read(&image, NULL, read_back, 0, NULL) != 0, "read: %s",
                  image.message);
    for (int i = 0; i < width * height * channels; i++)
        ck_assert_msg(read_back[i] == pixels[i], "byte %d = %u, expected %u", i, read_back[i],
                      pixels[i]);
    ck_assert_str_eq(zlibVersion(), ZLIB_VERSION);
    remove(path);
}
END_TEST

/* Fails on purpose: its message must come out of Check's formatting as C99 printf has it. */
START_TEST(test_fails_with_a_formatted_message)
{
    long long big = -1234567890123LL;
    unsigned int u = 4000000000u;
    size_t z = (size_t)1 << 40;
    ck_assert_msg(0, "lld=%lld u=%u zu=%zu g=%g s=%s", big, u, z, 2.5, "end");
}
END_TEST

/* Check's message of a failed assertion, as its runner records it. Check formatting with its own
 * vsnprintf (lib/snprintf.c, which knows no "ll") printed "d" for "%lld", took every later value
 * from the wrong argument, and here crashed on the %s. */
static int check_printf(void)
{
    const char expected[] = "lld=-1234567890123 u=4000000000 zu=1099511627776 g=2.5 s=end";
    Suite *suite = suite_create("check_printf");
    TCase *tcase = tcase_create("message");
    tcase_add_test(tcase, test_fails_with_a_formatted_message);
    suite_add_tcase(suite, tcase);
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_SILENT);
    TestResult **failures = srunner_failures(runner);
    int failed = srunner_ntests_failed(runner);
    const char *message = failed == 1 ? tr_msg(failures[0]) : "(no failure)";
    int same = strcmp(message, expected) == 0;
    printf("message:  %s\nexpected: %s\n%s\n", message, expected, same ? "same" : "DIFFERENT");
    free(failures);
    srunner_free(runner);
    return same ? EXIT_SUCCESS : EXIT_FAILURE;
}

static void print_device(cl_device_id device)
{
    char name[256] = "", version[256] = "", c_version[256] = "", driver[256] = "";
    cl_uint units = 0;
    cl_ulong memory = 0;
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_VERSION, sizeof c_version - 1, c_version, NULL);
    clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL);
    clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof memory, &memory, NULL);
    printf("  device: %s\n    version: %s; %s; driver %s\n    %u compute units, %llu MiB\n", name,
           version, c_version, driver, units, (unsigned long long)(memory >> 20));
}

static void CL_CALLBACK on_complete(cl_event event, cl_int status, void *data)
{
    (void)event;
    (void)status;
    (void)data;
}

/* Wine's opencl.dll passes clSetEventCallback's callback to no one: it answers
 * CL_INVALID_OPERATION, where a Windows OpenCL driver answers CL_SUCCESS. */
static void print_event_callback_status(cl_device_id device)
{
    cl_int status;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &status);
    if (status != CL_SUCCESS) {
        printf("clCreateContext: %s\n", cl_status_name(status));
        return;
    }
    cl_event event = clCreateUserEvent(context, &status);
    if (status == CL_SUCCESS) {
        status = clSetEventCallback(event, CL_COMPLETE, on_complete, NULL);
        printf("clSetEventCallback: %s\n", cl_status_name(status));
        clSetUserEventStatus(event, CL_COMPLETE);
        clReleaseEvent(event);
    }
    clReleaseContext(context);
}

static int list_platforms(void)
{
    cl_platform_id platforms[8];
    cl_uint n_platforms = 0;
    cl_int status = clGetPlatformIDs(8, platforms, &n_platforms);
    printf("clGetPlatformIDs: %s, %u platform(s)\n", cl_status_name(status), n_platforms);
    cl_uint n_devices_all = 0;
    cl_device_id first = NULL;
    for (cl_uint p = 0; status == CL_SUCCESS && p < n_platforms && p < 8; p++) {
        char name[256] = "", vendor[256] = "", version[256] = "";
        clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
        clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
        clGetPlatformInfo(platforms[p], CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
        printf("platform %u: %s (%s), %s\n", p, name, vendor, version);
        cl_device_id devices[8];
        cl_uint n_devices = 0;
        cl_int found = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 8, devices, &n_devices);
        if (found != CL_SUCCESS) {
            printf("  clGetDeviceIDs: %s\n", cl_status_name(found));
            continue;
        }
        for (cl_uint d = 0; d < n_devices && d < 8; d++)
            print_device(devices[d]);
        if (first == NULL && n_devices > 0)
            first = devices[0];
        n_devices_all += n_devices;
    }
    if (first != NULL)
        print_event_callback_status(first);
    return n_devices_all > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0)
        return list_platforms();
    if (argc == 2 && strcmp(argv[1], "--check-printf") == 0)
        return check_printf();
    if (argc == 3 && strcmp(argv[1], "--exit") == 0)
        return atoi(argv[2]);
    main_process_id = GetCurrentProcessId();
    Suite *suite = suite_create("windows_smoke");
    TCase *tcase = tcase_create("core");
    tcase_set_timeout(tcase, 120);
    tcase_add_test(tcase, test_kernel_computes_axpy_exactly);
    tcase_add_test(tcase, test_failed_build_reports_status_and_log);
    tcase_add_test(tcase, test_libconfig_reads_values_from_text);
    tcase_add_test(tcase, test_check_runs_tests_in_this_process);
    tcase_add_test(tcase, test_lapacke_dgetrf_gives_known_pivots_and_factors);
    tcase_add_test(tcase, test_lapacke_sgesv_solves_exactly_and_reports_singular);
    tcase_add_test(tcase, test_png_written_and_read_back_has_the_same_pixels);
    suite_add_tcase(suite, tcase);
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
