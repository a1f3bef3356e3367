/* cl_names.h — OpenCL error codes by name (cl_names.c). */
#ifndef CLOPS_CL_NAMES_H
#define CLOPS_CL_NAMES_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

/* "CL_OUT_OF_RESOURCES" for CL_OUT_OF_RESOURCES; "CL_UNKNOWN_ERROR" for a code not known. */
const char *cl_error_name(cl_int code);

#endif
