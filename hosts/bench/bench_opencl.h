/* bench_opencl.h — the OpenCL that areas call beside clops, on the pool's own device: CLBlast's
 * context (gemm) and the seed's kernel (mandelbrot). */
#ifndef CLOPS_BENCH_OPENCL_H
#define CLOPS_BENCH_OPENCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "clops.h"

/* The OpenCL device a pool's device is: the same platform and device indices when the name
 * agrees (machines with several identical GPUs), else the first device of that name; NULL
 * when there is none. */
cl_device_id bench_find_cl_device(const struct clops_device_info *want);

/* An OpenCL error code's name (plugin/cl_names.c, compiled into the bench too). */
#include "cl_names.h"

#endif
