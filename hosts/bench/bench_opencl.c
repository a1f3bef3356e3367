/* bench_opencl.c — finding the pool's device among the OpenCL platforms, and OpenCL error
 * names, for the areas that call OpenCL beside clops (bench_opencl.h). */
#include "bench_opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A device's (or, with device NULL, a platform's) string property, truncated to `size`:
 * clGet*Info() fails outright when the buffer is shorter than the whole string. */
static void info_string(cl_platform_id platform, cl_device_id device, cl_uint param, char *out,
                        size_t size)
{
    size_t needed = 0;
    out[0] = '\0';
    cl_int rc = device != NULL ? clGetDeviceInfo(device, param, 0, NULL, &needed)
                               : clGetPlatformInfo(platform, param, 0, NULL, &needed);
    if (rc != CL_SUCCESS || needed == 0)
        return;
    char *text = host_xcalloc(1, needed);
    rc = device != NULL ? clGetDeviceInfo(device, param, needed, text, NULL)
                        : clGetPlatformInfo(platform, param, needed, text, NULL);
    if (rc == CL_SUCCESS)
        snprintf(out, size, "%s", text);
    free(text);
}

static int device_matches(cl_platform_id platform, cl_device_id device,
                          const struct clops_device_info *want)
{
    char name[sizeof want->name], platform_name[sizeof want->platform];
    info_string(NULL, device, CL_DEVICE_NAME, name, sizeof name);
    info_string(platform, NULL, CL_PLATFORM_NAME, platform_name, sizeof platform_name);
    /* Both sides are truncated to the plugin's fixed-size fields the same way. */
    return strcmp(name, want->name) == 0 && strcmp(platform_name, want->platform) == 0;
}

cl_device_id bench_find_cl_device(const struct clops_device_info *want)
{
    cl_platform_id platforms[16];
    cl_uint platform_count = 0;
    cl_device_id by_name = NULL;
    if (clGetPlatformIDs(16, platforms, &platform_count) != CL_SUCCESS)
        return NULL;
    for (cl_uint p = 0; p < platform_count && p < 16; p++) {
        cl_device_id devices[64];
        cl_uint count = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 64, devices, &count) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < count && d < 64; d++) {
            if (!device_matches(platforms[p], devices[d], want))
                continue;
            if ((int32_t)p == want->platform_index && (int32_t)d == want->device_index)
                return devices[d];
            by_name = by_name != NULL ? by_name : devices[d];
        }
    }
    return by_name;
}
