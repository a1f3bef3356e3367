/* smoke.c — the Windows cross build's parts at work under Wine: OpenCL through the import
 * library (a kernel's numbers, a build log), libconfig's DLL, Check without fork.
 *   smoke            runs the Check suite
 *   smoke --list     prints the OpenCL platforms and devices that Wine shows
 *   smoke --exit N   returns N (wine-run must hand it back) */
#include <CL/cl.h>
#include <check.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

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
    suite_add_tcase(suite, tcase);
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
