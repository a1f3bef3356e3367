/* cli_json.h — what the `clops` command's JSON documents share (cli_json.c): the library that
 * answered, a device's members, a sweep, an error, and how a document ends (docs/json.md). */
#ifndef CLOPS_CLI_CLI_JSON_H
#define CLOPS_CLI_CLI_JSON_H

#include "cli.h"
#include "json.h"
#include "pipeline_source.h"

/* The `schema` member every document starts with, then `libclops`: the library's version, its
 * table's ABI and the file loaded. */
void cli_json_header(struct json_writer *w, const struct cli *cli, const char *schema);
/* The members of a device's object that devices_list and pool_device_info both fill. */
void cli_json_device_members(struct json_writer *w, const struct clops_device_info *d);
/* The `sweep` member: the swept params and the run count, or null when `src` is NULL or has no
 * sweep. */
void cli_json_member_sweep(struct json_writer *w, const struct pl_source *src);
/* The `error` member: {status, message}, or null when `status` is NULL. */
void cli_json_member_error(struct json_writer *w, const char *status, const char *message);
/* Ends a document: `code` when it was written whole, else CLI_FAILED with the reason on
 * stderr. */
int cli_json_end(struct json_writer *w, int code);

#endif
