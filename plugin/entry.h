/* entry.h — the ABI table behind clops_plugin_entry (exported from export.c). */
#ifndef CLOPS_ENTRY_H
#define CLOPS_ENTRY_H

#include <stdint.h>

#include "clops.h"

const struct clops_api *entry_table(uint32_t abi_major);

#endif
