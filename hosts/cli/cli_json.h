/* cli_json.h — what the `clops` command's JSON documents share (cli_json.c): the library that
 * answered, a device's members, and how a document ends (docs/json.md). */
#ifndef CLOPS_CLI_CLI_JSON_H
#define CLOPS_CLI_CLI_JSON_H

#include "cli.h"
#include "json.h"

/* The `schema` member every document starts with, then `libclops`: the library's version, its
 * table's ABI and the file loaded. */
void cli_json_header(struct json_writer *w, const struct cli *cli, const char *schema);
/* The members of a device's object that devices_list and pool_device_info both fill. */
void cli_json_device_members(struct json_writer *w, const struct clops_device_info *d);
/* Ends a document: `code` when it was written whole, else CLI_FAILED with the reason on
 * stderr. */
int cli_json_end(struct json_writer *w, int code);

#endif
