/* cli_json.c — the members every JSON document of the `clops` command shares (cli_json.h). */
#include "cli_json.h"

#include <stdio.h>

void cli_json_header(struct json_writer *w, const struct cli *cli, const char *schema)
{
    const struct clops_api *api = cli->lib.api;
    json_member_string(w, "schema", schema);
    json_key(w, "libclops");
    json_begin_object(w);
    json_member_string(w, "version", api->version());
    json_member_int(w, "abi_major", api->abi_major);
    json_member_int(w, "abi_minor", api->abi_minor);
    json_member_string(w, "path", cli->lib.path);
    json_end_object(w);
}

static const char *device_type_id(int32_t type)
{
    switch (type) {
    case CLOPS_DEVICE_GPU: return "gpu";
    case CLOPS_DEVICE_CPU: return "cpu";
    default: return "other";
    }
}

void cli_json_device_members(struct json_writer *w, const struct clops_device_info *d)
{
    json_member_int(w, "platform_index", d->platform_index);
    json_member_int(w, "device_index", d->device_index);
    json_member_string(w, "platform", d->platform);
    json_member_string(w, "type", device_type_id(d->type));
    json_member_string(w, "name", d->name);
    json_member_string(w, "vendor", d->vendor);
    json_member_string(w, "driver_version", d->driver_version);
    json_member_string(w, "opencl_version", d->opencl_version);
    json_member_int(w, "compute_units", d->compute_units);
    json_member_int(w, "global_mem_bytes", d->global_mem_bytes);
    json_member_int(w, "local_mem_bytes", d->local_mem_bytes);
    json_member_bool(w, "fp64", d->fp64);
}

void cli_json_member_sweep(struct json_writer *w, const struct pl_source *src)
{
    json_key(w, "sweep");
    if (src == NULL || src->sweep.axis_count == 0) {
        json_null(w);
        return;
    }
    json_begin_object(w);
    json_key(w, "params");
    json_begin_array(w);
    for (int i = 0; i < src->sweep.axis_count; i++)
        json_string(w, src->params.items[src->sweep.axes[i].param].name);
    json_end_array(w);
    json_member_int(w, "run_count", sweep_run_count(&src->sweep));
    json_end_object(w);
}

void cli_json_member_error(struct json_writer *w, const char *status, const char *message)
{
    json_key(w, "error");
    if (status == NULL) {
        json_null(w);
        return;
    }
    json_begin_object(w);
    json_member_string(w, "status", status);
    json_member_string(w, "message", message);
    json_end_object(w);
}

int cli_json_end(struct json_writer *w, int code)
{
    int status = json_finish(w);
    if (status == JSON_OK)
        return code;
    fprintf(stderr, "clops: %s\n",
            status == JSON_ERR_IO ? "cannot write the output" : "internal error: malformed JSON");
    return CLI_FAILED;
}
