/* pipeline_set.h — `clops run --set key.path=value` (pipeline_set.c). */
#ifndef CLOPS_CLI_PIPELINE_SET_H
#define CLOPS_CLI_PIPELINE_SET_H

#include <libconfig.h>
#include <stddef.h>

/* Applies one "path=value" override to a parsed configuration: the path names settings by key,
 * by list index ([2]) or, in a list of groups, by the group's `name` (tensors.A.shape); the
 * value is a libconfig value (64, 1.5, "text", [64, 64]). A missing last key is added. Returns
 * 0, or -1 with a message in `err`. */
int pipeline_apply_set(config_t *config, const char *assignment, char *err, size_t size);

/* Parses `text` as a libconfig value (64, 1.5, "text", [64, 64]) into `parsed`, which the call
 * initialises and the caller destroys (config_destroy) either way: the value's setting, or
 * NULL with a message in `err`. */
const config_setting_t *pipeline_parse_value(config_t *parsed, const char *text, char *err,
                                             size_t size);

#endif
