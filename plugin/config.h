/* config.h — the pool configuration: parsed from libconfig text or files, or built-in defaults.
 * Every error names file:line: key and what was expected; unknown keys are errors. */
#ifndef CLOPS_CONFIG_H
#define CLOPS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum { CONFIG_MAX_DEVICES = 8, CONFIG_MAX_OPS = 32, CONFIG_PATH_MAX = 1024 };
/* The default device_memory_percent: the rest of a device's reported memory is left to the
 * driver (contexts, programs, PoCL's per-kernel scratch) and to other users of the device. */
enum { CONFIG_DEVICE_MEMORY_PERCENT = 90 };
/* The default operators.<op>.split_min_ms. */
#define CONFIG_SPLIT_MIN_MS 2.0
/* The default operators.<op>.split_slabs, and the most: 0, no slabs. */
enum { CONFIG_SPLIT_SLABS = 0, CONFIG_SPLIT_SLABS_MAX = 8 };

/* One entry of `devices`: which OpenCL device to open. */
struct config_device {
    int32_t type;           /* CLOPS_DEVICE_GPU, CLOPS_DEVICE_CPU, or 0 for "any" */
    char vendor[64];        /* case-insensitive substring of platform or device vendor; "" = any */
    int32_t platform_index; /* -1 = any */
    int32_t index;          /* among the matching devices, which one; default 0 */
    int32_t queues;         /* command queues to open on it, 1..16; default 2 */
    int32_t required;       /* 0: skipped with a warning when absent; default 1 */
};

/* ---- Operator settings ------------------------------------------------------------------ */

/* A setting an operator declares (its tunings): read from operators.<op>.<name> and checked
 * when the configuration is parsed, like every other key; the operator reads the typed value
 * (pool_op_setting, by its position in the list) and turns it into -D values of its own where a
 * kernel needs one. */
enum setting_type { SETTING_INT = 1, SETTING_BOOL = 2 };
/* The default of a setting that the operator's tuning table picks per device. */
#define SETTING_PER_DEVICE INT32_MIN
enum { CONFIG_MAX_SETTINGS = 16 };

struct op_setting {
    const char *name;   /* the key under operators.<op> */
    int32_t type;       /* enum setting_type */
    int32_t min, max;   /* SETTING_INT: the accepted range */
    int32_t def;        /* the default (SETTING_BOOL: 0 or 1), or SETTING_PER_DEVICE */
    const char *define; /* the old spelling, "-D<define>=<n>" in operators.<op>.build_options,
                           still honoured (and taken out of the options); NULL: none */
};

/* An operator's declared settings (struct op_impl's `settings`): static, for the library's
 * lifetime. */
struct op_settings {
    const struct op_setting *list;
    int32_t count; /* at most CONFIG_MAX_SETTINGS */
};

/* Where a setting's value came from. */
enum setting_origin { SETTING_DEFAULT = 0, SETTING_KEY = 1, SETTING_BUILD_OPTIONS = 2 };

/* One entry of `operators`: settings the core applies to one operator. */
struct config_op {
    char name[64];  /* must name a registered operator */
    int32_t device; /* index into the pool's opened devices; -1 = the primary (0) */
    /* operators.<op>.devices: the devices one call is split over (GEMM), indexes into the pool's
     * devices, distinct; split_count < 2: not split. operators.<op>.split: the share of each
     * (fractions summing to 1), or none: by their measured speed. */
    int32_t split_devices[CONFIG_MAX_DEVICES];
    int32_t split_count;
    double split_share[CONFIG_MAX_DEVICES];
    int32_t share_count;     /* 0: measured */
    double split_min_ms;     /* operators.<op>.split_min_ms: calls expected to take less on the
                                fastest device run whole; default CONFIG_SPLIT_MIN_MS */
    char build_options[512]; /* appended to the kernel build options of this operator, less the
                                old spellings of its settings */
    /* The operator's declared settings, in its declaration's order. */
    int32_t values[CONFIG_MAX_SETTINGS];
    int8_t origin[CONFIG_MAX_SETTINGS]; /* enum setting_origin */
    /* operators.<op>.split_slabs: the slabs of its reduction a piece of a part is computed in,
     * where the part's operands and outputs move from another device (op_impl's pieces); 0 or
     * 1: none. Default CONFIG_SPLIT_SLABS. */
    int32_t split_slabs;
};

struct pool_config {
    char source[CONFIG_PATH_MAX]; /* file name, or "<string>", for messages */
    struct config_device devices[CONFIG_MAX_DEVICES];
    int32_t device_count;             /* 0 = defaults: first GPU, else the first CPU device */
    int32_t devices_line;             /* the line of the `devices` section; 0: there is none */
    int32_t cpu_fallback;             /* 1: when no listed device is found, use a CPU device */
    int32_t profiling;                /* 1: queues record profiling events (device time in stats);
                                         default 0 */
    int32_t kernel_times;             /* 1: each call logs its device time per kernel (info);
                                         turns profiling on */
    int32_t device_memory_percent;    /* of a device's global memory clops may hold; default 90 */
    char build_options[512];          /* for every kernel build, before per-operator options */
    int32_t cache_enabled;            /* program binary cache on disk; default 1 */
    char cache_dir[CONFIG_PATH_MAX];  /* "" = $XDG_CACHE_HOME/clops, else ~/.cache/clops */
    char kernel_dir[CONFIG_PATH_MAX]; /* "" = embedded kernels; else read <dir>/<name>.cl */
    struct config_op ops[CONFIG_MAX_OPS];
    int32_t op_count;
};

void config_defaults(struct pool_config *cfg);
/* Parse into `cfg` (first reset to defaults). On error: CLOPS_ERR_CONFIG (or CLOPS_ERR_IO when
 * the file cannot be read) with the message set through err_set(). */
int32_t config_parse_file(const char *path, struct pool_config *cfg);
int32_t config_parse_string(const char *text, struct pool_config *cfg);
/* The settings for operator `name`, or NULL when the configuration has none. */
const struct config_op *config_find_op(const struct pool_config *cfg, const char *name);
/* The settings operator `op_name` declares (an empty list when it declares none). */
struct op_settings config_op_declared_settings(const char *op_name);
/* The value of operator `op_name`'s setting `setting` in `op` (NULL: not configured): the
 * configured value, else the declared default, else, for a SETTING_PER_DEVICE one,
 * `device_default`. An undeclared `setting` gives `device_default`. */
int32_t config_op_setting(const struct config_op *op, const char *op_name, const char *setting,
                          int32_t device_default);
/* "operators.gemm.tile_m = 100, operators.gemm.build_options -DWPT_M=8": the configured
 * settings of `op` and where each was set, for a message refusing their combination; "the
 * defaults" when none is. */
void config_op_describe_settings(const struct config_op *op, const char *op_name, char *out,
                                 size_t size);

#endif
