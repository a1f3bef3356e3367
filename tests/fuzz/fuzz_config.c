/* fuzz_config.c — libFuzzer harness for the pool configuration parser (plugin/config.c): any
 * text either parses into a configuration within the documented limits or is refused with a
 * "source:line: ..." message, and leaves nothing allocated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "fuzz_util.h"

static int terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

static void check_config(int32_t status, const struct pool_config *cfg)
{
    if (status != CLOPS_OK) {
        if (status != CLOPS_ERR_CONFIG || err_last()[0] == '\0')
            abort();
        return;
    }
    if (cfg->device_count < 0 || cfg->device_count > CONFIG_MAX_DEVICES || cfg->op_count < 0 ||
        cfg->op_count > CONFIG_MAX_OPS)
        abort();
    for (int32_t i = 0; i < cfg->device_count; i++) {
        const struct config_device *d = &cfg->devices[i];
        if (d->queues < 1 || d->queues > 16 || d->index < 0 ||
            !terminated(d->vendor, sizeof d->vendor))
            abort();
    }
    for (int32_t i = 0; i < cfg->op_count; i++) {
        const struct config_op *op = &cfg->ops[i];
        if (!terminated(op->name, sizeof op->name) ||
            !terminated(op->build_options, sizeof op->build_options) ||
            config_find_op(cfg, op->name) == NULL)
            abort();
        if (op->device != -1 &&
            (op->device < 0 || op->device >= (cfg->device_count > 0 ? cfg->device_count : 1)))
            abort();
    }
    if (!terminated(cfg->build_options, sizeof cfg->build_options) ||
        !terminated(cfg->cache_dir, sizeof cfg->cache_dir) ||
        !terminated(cfg->kernel_dir, sizeof cfg->kernel_dir))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fuzz_has_include(data, size))
        return -1;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    static struct pool_config cfg; /* 50 KB: not on the stack */
    check_config(config_parse_string(text, &cfg), &cfg);
    free(text);
    return 0;
}
