/* prebuild.h — kernels built ahead of time (ABI 1.5's pool_prebuild). */
#ifndef CLOPS_PREBUILD_H
#define CLOPS_PREBUILD_H

#include <stdint.h>

#include "clops.h"

/* pool_prebuild (abi/clops.h) on checked args (the struct, a held pool, flags 0, ops and
 * dtypes arrays present where their counts say): the calls, then the outputs. */
int32_t prebuild_run(struct clops_prebuild_args *args);

#endif
