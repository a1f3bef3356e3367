"""check_json.py CLOPS SCHEMA_DIR — `clops ops --json`, `clops ops gemm --json` and `clops devices
--json` (with a device, and with none) validated against docs/schema/, strictly: every member the
output has must be one the schema documents. Then a few values the outputs must hold, and a
check that the validator rejects a document with a member removed. Exits 1 on any failure,
jsonschema missing included (Debian: python3-jsonschema)."""
import copy
import json
import os
import re
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("FAIL: the python3 module jsonschema is missing (Debian: apt-get install python3-jsonschema)")
    sys.exit(1)

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def run(clops, *args, env=None, rc=0):
    proc = subprocess.run([clops, *args], capture_output=True, text=True, env=env, timeout=600)
    check(proc.returncode == rc,
          f"clops {' '.join(args)} exited with {proc.returncode}, expected {rc}: {proc.stderr}")
    return proc.stdout


def strict(schema):
    """The schema with "unevaluatedProperties": false in every object schema that lists
    properties, except those that others extend through $ref (a base must let its extensions'
    members through; the extension then closes the object)."""
    schema = copy.deepcopy(schema)
    nodes, bases = [], set()

    def walk(node):
        if isinstance(node, dict):
            nodes.append(node)
            if "$ref" in node and "properties" in node:
                bases.add(node["$ref"].split("/")[-1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    base_nodes = [id(schema["$defs"][name]) for name in bases]
    for node in nodes:
        # Only object schemas with a declared type; the if/then/else parts restrict, not declare.
        if "properties" in node and "required" in node and id(node) not in base_nodes:
            node["unevaluatedProperties"] = False
    return schema


def validate(document, schema, what):
    validator = jsonschema.Draft202012Validator(strict(schema))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    for error in errors:
        print(f"  {what}: {'/'.join(map(str, error.path))}: {error.message}")
    check(not errors, f"{what} does not match its schema ({len(errors)} errors)")


def finish(success):
    """main()'s exit status: 1 after counting the failures, else 0 after the line `success`."""
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print(success)
    return 0


def main():
    clops, schema_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(schema_dir, "clops-ops.schema.json")) as f:
        ops_schema = json.load(f)
    with open(os.path.join(schema_dir, "clops-devices.schema.json")) as f:
        devices_schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(ops_schema)
    jsonschema.Draft202012Validator.check_schema(devices_schema)

    # ---- clops ops --json ----
    ops = json.loads(run(clops, "ops", "--json"))
    validate(ops, ops_schema, "clops ops --json")
    check(ops["schema"] == "clops-ops/1", "ops: schema is clops-ops/1")
    names = [op["name"] for op in ops["operators"]]
    for name in ("gemm", "reduce", "transpose", "mandelbrot", "lu", "solve", "lu_solve"):
        check(name in names, f"ops: {name} is listed")
    # The documentation says what an operator does, not where its code came from (issue 12).
    for op in ops["operators"]:
        for text in [op["summary"], op["doc"]] + [p["doc"] for p in op["params"]]:
            history = re.search(r"course seed|[Tt]he old spellings?|no longer|still read", text)
            check(history is None, f"ops: {op['name']}'s doc tells history: '{history and history[0]}'")
    # The text table lists the same operators, in the same order.
    text = run(clops, "ops", env=dict(os.environ, COLUMNS="300"))
    lines = text.splitlines()
    rule = next((i for i, line in enumerate(lines) if line.startswith("---")), len(lines))
    rows = lines[rule + 1:]
    check([row.split()[0] for row in rows if row.strip()] == names,
          f"ops: the text table's names {rows} are the JSON's {names}")

    # ---- clops ops gemm --json ----
    gemm_doc = json.loads(run(clops, "ops", "gemm", "--json"))
    validate(gemm_doc, ops_schema, "clops ops gemm --json")
    check(len(gemm_doc["operators"]) == 1, "ops gemm: exactly one operator")
    gemm = gemm_doc["operators"][0]
    check(gemm == ops["operators"][names.index("gemm")], "ops gemm: the same as in the full list")
    params = {p["name"]: p for p in gemm["params"]}
    check([p["name"] for p in gemm["params"]] == ["a", "b", "c", "trans_a", "trans_b", "alpha", "beta",
                                               "precision"],
          f"ops gemm: parameters a, b, c, trans_a, trans_b, alpha, beta, precision in order, "
          f"not {list(params)}")
    check(params["a"]["kind"] == "tensor_in" and params["a"]["dtypes"] == ["f32", "f64"]
          and params["a"]["required"] and params["a"]["default"] is None,
          f"ops gemm: a is a required f32/f64 input tensor: {params['a']}")
    check(params["c"]["kind"] == "tensor_inout", f"ops gemm: c is in/out: {params['c']}")
    check(params["trans_a"]["kind"] == "enum" and params["trans_a"]["enum_values"] == ["none", "transpose"]
          and params["trans_a"]["default"] == "none" and not params["trans_a"]["required"],
          f"ops gemm: trans_a is the enum none|transpose, default none: {params['trans_a']}")
    check(params["alpha"]["kind"] == "double" and params["alpha"]["default"] == "1",
          f"ops gemm: alpha is a double, default 1: {params['alpha']}")
    check("\n\n" in gemm["doc"] and "CLOPS_ERR_INVALID_ARGUMENT" in gemm["doc"],
          "ops gemm: the whole doc, paragraphs and errors")
    mandelbrot = ops["operators"][names.index("mandelbrot")]
    image = [p for p in mandelbrot["params"] if p["name"] == "image"][0]
    check(image["default"] == "none" and not image["required"] and image["dtypes"] == ["u8"],
          f"ops: mandelbrot's image is an optional u8 tensor: {image}")
    run(clops, "ops", "gemmm", "--json", rc=2)

    # ---- clops devices --json ----
    devices = json.loads(run(clops, "devices", "--json"))
    validate(devices, devices_schema, "clops devices --json")
    check(len(devices["devices"]) > 0, "devices: at least one device (PoCL)")
    pool = devices["pool"]
    check(pool["error"] is None and pool["config"] is None and pool["devices"],
          f"devices: the default pool opened devices: {pool}")
    if pool["devices"]:
        primary = pool["devices"][0]
        listed = [d for d in devices["devices"]
                  if (d["platform_index"], d["device_index"]) == (primary["platform_index"],
                                                                  primary["device_index"])]
        check(len(listed) == 1 and listed[0]["pool_device"] == 0 and listed[0]["name"] == primary["name"],
              "devices: the pool's primary device is listed, marked pool_device 0")
        check(primary["index"] == 0 and primary["queues"] >= 1, f"devices: pool device 0: {primary}")
    for d in devices["devices"]:
        check(d["opencl_version"].startswith("OpenCL "), f"devices: an OpenCL version: {d}")
        check(d["compute_units"] > 0 and d["global_mem_bytes"] > 0, f"devices: sizes: {d}")

    # No OpenCL platform: still a valid document, with the pool's error; exit 1 as the table's.
    env = dict(os.environ, OCL_ICD_VENDORS=os.path.join(os.getcwd(), "no-opencl-vendors"))
    none = json.loads(run(clops, "devices", "--json", env=env, rc=1))
    validate(none, devices_schema, "clops devices --json without OpenCL")
    check(none["devices"] == [] and none["pool"]["devices"] is None
          and none["pool"]["error"]["status"] == "CLOPS_ERR_NO_DEVICE",
          f"devices without OpenCL: no devices, the pool's error: {none['pool']}")

    # The validator is live: a document less a required member, or with one undocumented, fails.
    broken = copy.deepcopy(devices)
    del broken["devices"][0]["fp64"]
    extra = copy.deepcopy(ops)
    extra["operators"][0]["params"][0]["colour"] = "red"
    for document, schema, what in ((broken, devices_schema, "devices less fp64"),
                                   (extra, ops_schema, "ops with an undocumented member")):
        errors = list(jsonschema.Draft202012Validator(strict(schema)).iter_errors(document))
        check(errors, f"the schema rejects {what}")

    return finish("clops ops --json, ops gemm --json and devices --json match docs/schema/")


if __name__ == "__main__":
    sys.exit(main())
