/* export.c — the one symbol the plugin exports (libclops.so: see clops.map; clops.dll: the one
 * dllexport); everything else is hidden. */
#include "entry.h"

#ifdef _WIN32
#define CLOPS_EXPORT __declspec(dllexport)
#else
#define CLOPS_EXPORT __attribute__((visibility("default")))
#endif

CLOPS_EXPORT const struct clops_api *clops_plugin_entry(uint32_t abi_major)
{
    return entry_table(abi_major);
}
