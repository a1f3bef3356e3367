/* export.c — the one symbol libclops.so exports (see clops.map); everything else is hidden. */
#include "entry.h"

__attribute__((visibility("default"))) const struct clops_api *
clops_plugin_entry(uint32_t abi_major)
{
    return entry_table(abi_major);
}
