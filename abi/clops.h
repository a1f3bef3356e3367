/* clops.h — the whole public ABI of the clops plugin (libclops.so.1), readable top to bottom.
 *
 * A host reaches everything through one symbol:
 *
 *     const struct clops_api *api = clops_plugin_entry(CLOPS_ABI_MAJOR);
 *
 * The returned table is static and const, valid for the lifetime of the loaded library.
 *
 * ## The growth rule (the ABI is a promise)
 * - Every struct in this header only grows by appending members at its end. No member is ever
 *   removed, reordered or retyped within a major version.
 * - `struct clops_api` starts with its own `struct_size`. A host compiled against a newer header
 *   must check `api->struct_size >= offsetof(struct clops_api, member) + sizeof(api->member)`
 *   (the CLOPS_API_HAS() macro below) before touching a member added after its plugin's version.
 * - Structs the host fills for the plugin to write into (`clops_stats`, `clops_device_info`, ...)
 *   start with `struct_size`, set by the host to `sizeof` of its own copy; the plugin writes only
 *   the members that fit.
 * - Arrays of structs cross the ABI with their element size, so that their structs can grow
 *   too: the plugin's `clops_op.params` lie `clops_op.param_size` bytes apart (step with
 *   clops_op_param(), never with the host's own sizeof), and a host hands invoke_sized() the
 *   sizeof of its own `clops_arg`. Every function added later that takes an array of structs
 *   takes the size of its elements.
 * - Only fixed-width types cross the ABI: int32_t, int64_t, uint32_t, uint16_t, double, pointers,
 *   and enums with explicit values (passed as int32_t). No bool, long, size_t or struct by value,
 *   so a Fortran `bind(c)` type or a Julia struct can mirror every struct here.
 *
 * ## Ownership and lifetime
 * - Strings in descriptors (`clops_op`, `clops_param`) are owned by the plugin and live as long
 *   as the library is loaded.
 * - The message from `last_error()` is owned by the plugin, per thread, and valid until the next
 *   clops call on the same thread (like dlerror()).
 * - Pools and buffers are created by the plugin and released by the host with the matching
 *   release function; the host never frees them itself.
 * - Host memory passed in tensors stays owned by the host; the plugin reads or writes it only
 *   during the call it was passed to: until it returns for the synchronous calls (invoke, the
 *   typed entries), until its event completes for a submitted call (ABI 1.4, `submit`).
 *
 * ## Errors
 * Every function that can fail returns an `enum clops_status` (CLOPS_OK = 0). A failed call
 * changes nothing: arguments are validated before the device is touched, and outputs are not
 * half-written. The plugin never prints, never calls exit() or abort(); diagnostics go to the
 * optional log callback.
 */
#ifndef CLOPS_H
#define CLOPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLOPS_ABI_MAJOR 1
#define CLOPS_ABI_MINOR 5
#define CLOPS_MAX_RANK 4

/* True when the table `api` is large enough to hold `member`. */
#define CLOPS_API_HAS(api, member)                                                                 \
    ((api)->struct_size >= offsetof(struct clops_api, member) + sizeof((api)->member))
/* True when the descriptor `op` (its struct_size) holds `member`. */
#define CLOPS_OP_HAS(op, member)                                                                   \
    ((op)->struct_size >= offsetof(struct clops_op, member) + sizeof((op)->member))

/* The element sizes of ABI 1.0 and 1.1, which did not state them: sizeof(struct clops_param)
 * of a plugin whose descriptors have no `param_size`, and sizeof(struct clops_arg) of a host
 * that calls invoke() (the least arg_size invoke_sized() accepts). */
#define CLOPS_PARAM_SIZE_1_1 40
#define CLOPS_ARG_SIZE_1_1 48

enum clops_status {
    CLOPS_OK = 0,
    CLOPS_ERR_INVALID_ARGUMENT = 1, /* a parameter's value is wrong: the message names it */
    CLOPS_ERR_UNSUPPORTED = 2,      /* a dtype, layout or option this operator does not handle */
    CLOPS_ERR_OUT_OF_DEVICE_MEMORY = 3,
    CLOPS_ERR_OUT_OF_HOST_MEMORY = 4,
    CLOPS_ERR_DEVICE = 5,        /* an OpenCL call failed: the message carries its error name */
    CLOPS_ERR_BUILD = 6,         /* a kernel failed to build: the message carries the build log */
    CLOPS_ERR_CONFIG = 7,        /* a configuration error: the message has file:line: key */
    CLOPS_ERR_IO = 8,            /* a file could not be read or written */
    CLOPS_ERR_NOT_FOUND = 9,     /* no such operator, parameter, device or file */
    CLOPS_ERR_ABI_MISMATCH = 10, /* a struct_size too small, or an unknown ABI version */
    CLOPS_ERR_NO_DEVICE = 11,    /* no OpenCL device matches the configuration */
    CLOPS_ERR_INTERNAL = 12,     /* a bug in clops: please report the message */
    /* ---- Added in ABI 1.4 ---- */
    CLOPS_ERR_CANCELLED = 13, /* the call was cancelled (event_cancel), or a call it waited for
                                 failed or was cancelled: its host outputs are untouched */
    CLOPS_ERR_TIMEOUT = 14    /* event_wait's timeout passed first; nothing else changed */
};
/* CLOPS_ERR_OUT_OF_DEVICE_MEMORY: a buffer or an operator's temporaries (host tensors staged on
 * the device, scratch) would pass the device's limit, or one allocation is larger than the
 * device allows (CL_DEVICE_MAX_MEM_ALLOC_SIZE). The limit is the pool setting
 * device_memory_percent (default 90) of what the device reports (CL_DEVICE_GLOBAL_MEM_SIZE),
 * counted over every pool of the process on that device; clops refuses before the driver is
 * asked, because lazy drivers (PoCL) accept any total and abort the process at first use. The
 * message names the device, the bytes asked, the bytes in use and the limit. Nothing changed:
 * buffers already created stay valid, outputs are untouched, and releasing buffers makes room. */

enum clops_dtype {
    CLOPS_DTYPE_INVALID = 0,
    CLOPS_F32 = 1,
    CLOPS_F64 = 2,
    CLOPS_I32 = 3,
    CLOPS_U32 = 4,
    CLOPS_U8 = 5,
    CLOPS_I64 = 6
};

/* Bit for a dtype in `clops_param.dtypes`. */
#define CLOPS_DTYPE_BIT(dtype) (1u << (uint32_t)(dtype))

enum clops_log_level {
    CLOPS_LOG_ERROR = 0,
    CLOPS_LOG_WARNING = 1,
    CLOPS_LOG_INFO = 2,
    CLOPS_LOG_DEBUG = 3
};

/* Receives the plugin's diagnostics. `message` is valid only during the call. The callback may
 * be called from any thread that calls into clops. */
typedef void (*clops_log_fn)(int32_t level, const char *message, void *user);

/* Opaque objects, created and released through the table. */
struct clops_pool;   /* devices, contexts, queues, built programs; shared by host threads */
struct clops_buffer; /* device memory on a pool's primary device */
struct clops_stream; /* ABI 1.4: an in-order queue of calls on one device of a pool */
struct clops_event;  /* ABI 1.4: the outcome of one submitted call, once it is known */

/* A tensor: host memory or a device buffer, viewed through shape and strides in elements.
 * Element (i0, i1, ...) lives at element index  offset + i0*strides[0] + i1*strides[1] + ...
 * of `data` (host memory) or of `buffer` (device memory); exactly one of the two is non-NULL.
 * Row-major M×N: shape {M, N}, strides {ld, 1}. Column-major (Fortran, Julia): strides {1, ld}.
 * A transposed view swaps shape and strides; no copy is ever needed. Strides must be >= 1 for
 * every axis of extent > 1. Members past `rank` are ignored. */
struct clops_tensor {
    void *data;                  /* host memory, owned by the host; NULL for a device tensor */
    struct clops_buffer *buffer; /* device memory, owned by the host's pool; NULL for host */
    int64_t offset;              /* in elements, from data or from the buffer's start */
    int32_t dtype;               /* enum clops_dtype */
    int32_t rank;                /* 0 .. CLOPS_MAX_RANK */
    int64_t shape[CLOPS_MAX_RANK];
    int64_t strides[CLOPS_MAX_RANK];
};

/* ---- Operator descriptors ------------------------------------------------------------------ */

enum clops_param_kind {
    CLOPS_PARAM_TENSOR_IN = 1,    /* typed entry: const struct clops_tensor * */
    CLOPS_PARAM_TENSOR_OUT = 2,   /* typed entry: const struct clops_tensor * (data written) */
    CLOPS_PARAM_TENSOR_INOUT = 3, /* typed entry: const struct clops_tensor * (read, written) */
    CLOPS_PARAM_INT64 = 4,        /* typed entry: int64_t */
    CLOPS_PARAM_DOUBLE = 5,       /* typed entry: double */
    CLOPS_PARAM_ENUM = 6,         /* typed entry: int32_t, the index into `enum_values` */
    CLOPS_PARAM_STRING = 7        /* typed entry: const char * (may be NULL) */
};

struct clops_param {
    const char *name;
    int32_t kind;                   /* enum clops_param_kind */
    uint32_t dtypes;                /* tensors: CLOPS_DTYPE_BIT()s accepted; 0 for other kinds */
    const char *const *enum_values; /* enums: NULL-terminated allowed strings; else NULL */
    /* Textual default; NULL when the parameter is required. For a tensor the only default is
     * CLOPS_OPTIONAL ("none"): the tensor may be left out (the typed entry then gets NULL). */
    const char *default_value;
    const char *doc;
};

struct clops_op {
    uint32_t struct_size; /* sizeof(struct clops_op) in the plugin */
    int32_t version;      /* bumped when the operator's behaviour changes */
    const char *name;
    const char *summary; /* one line */
    const char *doc;     /* paragraphs: semantics, conventions, errors */
    int32_t param_count;
    int32_t reserved;
    const struct clops_param *params; /* param_count of them, param_size bytes apart */
    /* The typed C entry point: cast to the operator's prototype below (clops_<name>_fn). Its
     * parameters are the pool, then `params` in order, with the C types listed in
     * enum clops_param_kind; it returns enum clops_status as int32_t. An operator's parameters
     * only grow by appending ones with a default; the prototype never changes, so parameters
     * appended after it was published (their doc begins "Invoke only") are not among its
     * arguments: through it they take their default, through invoke() they can be set. */
    void (*entry)(void);

    /* ---- Appended in ABI 1.2 (check with CLOPS_OP_HAS) ---- */
    /* sizeof(struct clops_param) in the plugin: the distance in bytes from one element of
     * `params` to the next. A host steps with it (clops_op_param() below), not with its own
     * sizeof, and reads of a parameter only the members that fit in it. A descriptor without
     * it comes from a 1.0 or 1.1 plugin, whose parameters are CLOPS_PARAM_SIZE_1_1 bytes.
     * Hosts built against 1.0 or 1.1 index `params[i]` with that size, so struct clops_param
     * keeps it while they are served; param_size is what lets hosts built from 1.2 on keep
     * working once it grows. */
    uint32_t param_size;
    int32_t reserved2; /* 0 */
};

#define CLOPS_OPTIONAL "none"

/* ---- Typed prototypes of the operators ------------------------------------------------------
 * Call them through `op->entry` of the descriptor found with op_find("gemm"). */

enum clops_transpose { CLOPS_NO_TRANS = 0, CLOPS_TRANS = 1 };

/* gemm: C = alpha * op(A) * op(B) + beta * C, f32 or f64; all three of one dtype.
 * op(A) is M×K, op(B) is K×N, C is M×N. beta = 0 ignores C's prior contents (NaN included).
 * Invoke only (appended later): precision, "fp32" (here), "3xtf32" or "tf32" for f32. */
typedef int32_t (*clops_gemm_fn)(struct clops_pool *pool, const struct clops_tensor *a,
                                 const struct clops_tensor *b, const struct clops_tensor *c,
                                 int32_t trans_a, int32_t trans_b, double alpha, double beta);

/* lu: P·A = L·U with partial pivoting (LAPACK getrf). a (M×N, f32|f64) is overwritten by L
 * (unit diagonal, not stored) and U; ipiv (i32, min(M,N)) receives 1-based row interchanges as
 * LAPACK's; info (i32, 1 element) receives 0, or k > 0 when U(k,k) is exactly zero (the
 * factorization still completes). pivoting: 0 = "partial", 1 = "none" (unsafe; for comparison). */
typedef int32_t (*clops_lu_fn)(struct clops_pool *pool, const struct clops_tensor *a,
                               const struct clops_tensor *ipiv, const struct clops_tensor *info,
                               int32_t pivoting);

/* solve: A·X = B (LAPACK gesv). a (N×N) is overwritten by its LU factors, b (N×NRHS) by X,
 * ipiv and info as for lu. info > 0: A is singular and b is left untouched. */
typedef int32_t (*clops_solve_fn)(struct clops_pool *pool, const struct clops_tensor *a,
                                  const struct clops_tensor *b, const struct clops_tensor *ipiv,
                                  const struct clops_tensor *info);

/* lu_solve: solves with the factors and pivots from lu (LAPACK getrs); trans: 0 = A·X = B,
 * 1 = Aᵀ·X = B. b (N×NRHS) is overwritten by X. */
typedef int32_t (*clops_lu_solve_fn)(struct clops_pool *pool, const struct clops_tensor *lu,
                                     const struct clops_tensor *ipiv, const struct clops_tensor *b,
                                     int32_t trans);

/* reduce: op (enum, see the descriptor: sum, min, max, norm2, argmin, argmax) over the whole of
 * x (axis = -1) or along one axis of a 2-D x; results in out. */
typedef int32_t (*clops_reduce_fn)(struct clops_pool *pool, const struct clops_tensor *x,
                                   const struct clops_tensor *out, int32_t op, int64_t axis);

/* transpose: y = xᵀ over the last two axes (rank 2, or rank 3 for a batch). In place when y
 * views the same memory as x (square matrices only). */
typedef int32_t (*clops_transpose_fn)(struct clops_pool *pool, const struct clops_tensor *x,
                                      const struct clops_tensor *y);

/* mandelbrot: iteration counts (u32, H×W) of the view centred on (center_x, center_y), `scale`
 * wide in the complex plane, and optionally (NULL) an RGBA image (u8, H×W×4) through the
 * palette; precision: 0 = f32, 1 = f64; split: "dynamic", or the GPU's fraction "0".."1". */
typedef int32_t (*clops_mandelbrot_fn)(struct clops_pool *pool,
                                       const struct clops_tensor *iterations,
                                       const struct clops_tensor *image, double center_x,
                                       double center_y, double scale, int64_t max_iterations,
                                       int32_t precision, const char *split, int64_t tile);

/* ---- Generic invoke ------------------------------------------------------------------------
 * One argument for invoke(): `kind` tags which member holds the value. `name` matches a
 * parameter by name; a NULL name takes the next parameter by position. Positional arguments
 * must come before named ones. Parameters with a default may be left out. An enum argument
 * is the allowed string in `s`, or, when `s` is NULL, the index in `i`.
 * The host owns the array and the strings and tensors it points to; the plugin reads them only
 * during the call. The array goes to invoke_sized() with its element size, so this struct may
 * grow: a member appended here is read only from hosts whose arg_size covers it and is zero for
 * older hosts, so its zero value must mean what the call did before it existed. */
struct clops_arg {
    const char *name; /* NULL = positional */
    int32_t kind;     /* enum clops_param_kind; TENSOR_IN/OUT/INOUT are interchangeable here */
    int32_t reserved;
    const struct clops_tensor *tensor;
    int64_t i;
    double d;
    const char *s;
};

/* What an output tensor of a call must be (check_sized, ABI 1.2). */
struct clops_output_spec {
    uint32_t struct_size; /* the bytes the plugin wrote of this element */
    int32_t param;        /* the output's index among the descriptor's parameters */
    int32_t dtype;        /* enum clops_dtype */
    int32_t rank;         /* -1: not known */
    int64_t shape[CLOPS_MAX_RANK];
};
#define CLOPS_OUTPUT_SPEC_SIZE_1_2 48

/* ---- Non-blocking calls (ABI 1.4): streams, events, submit ---------------------------------
 * A stream is an in-order queue of calls on one device of a pool: the device work of a call
 * submitted to it runs after that of the calls submitted to it before, and the call sees their
 * results, in host memory as in device buffers. Two streams run side by side: one's transfers
 * overlap the other's kernels. Calls on different streams are ordered only through events (a wait
 * list, or stream_wait).
 *
 * submit() checks a call as invoke_sized() would and returns at once: with an event, or with the
 * error of a call refused by its checks (then nothing was queued, no event was made and no
 * callback will run). Everything after the checks (staging, the kernels, the download, writing
 * host outputs) happens on threads the stream owns.
 *
 * Host memory named in a submitted call (tensors' data) must stay valid, and must not be written
 * by the host, until the call's event completes; output tensors' host memory is written only
 * then, after every device step succeeded, and not at all when the call fails or is cancelled.
 *
 * An event is the host's until it releases it (event_release), whatever happens to the call:
 * release every event submit() returns, also those never waited for. Its outcome is a state
 * (queued, running, complete, failed, cancelled), a status and a message, readable from any
 * thread (event_query). A completion callback, given at submit or later (event_on_complete),
 * runs exactly once per event, when the outcome is known (also for a failed or cancelled call):
 * on a thread of the stream, never on the host's thread or a driver's, never under a clops lock,
 * one at a time per stream, in the order the stream's calls complete. A callback may call any
 * clops function but must not wait: event_wait with a timeout other than 0 is refused there
 * (CLOPS_ERR_INVALID_ARGUMENT), and stream_release called there does not wait for the stream's
 * calls (the stream stops once they have ended). It should return soon: the stream's later
 * completions wait for it.
 *
 * Objects the host lends (ABI 1.4 interop: a cl_context, cl_command_queue, cl_mem, cl_event) are
 * retained by clops while it uses them and never freed by it; getters that hand out OpenCL
 * objects do not retain them unless they say so (oneDNN's rules). OpenCL handles cross this ABI
 * as `void *` so that this header does not need CL/cl.h. */

enum clops_event_state {
    CLOPS_EVENT_QUEUED = 0,   /* submitted; waiting for the calls before it */
    CLOPS_EVENT_RUNNING = 1,  /* its device work is queued or running */
    CLOPS_EVENT_COMPLETE = 2, /* succeeded: outputs written */
    CLOPS_EVENT_FAILED = 3,   /* failed: status and message say why; host outputs untouched */
    CLOPS_EVENT_CANCELLED = 4 /* cancelled (status CLOPS_ERR_CANCELLED); host outputs untouched */
};

/* A completion callback: `status` is the call's (CLOPS_OK, or why it failed); the event stays
 * the host's (the callback may release it, or keep it). */
typedef void (*clops_event_fn)(struct clops_event *event, int32_t status, void *user);

struct clops_stream_create_args {
    uint32_t struct_size; /* set by the host: sizeof(struct clops_stream_create_args) */
    int32_t device;       /* the pool's device index (pool_device_count) */
    struct clops_pool *pool;
    /* Optional (interop): an in-order cl_command_queue of the host on that device and the
     * pool's cl_context, used instead of a queue of clops' own; retained while the stream
     * lives, never released by clops beyond that. NULL: clops opens a queue for the stream. */
    void *cl_queue;
    struct clops_stream *stream; /* out: the host's until stream_release */
};

struct clops_stream_release_args {
    uint32_t struct_size;
    int32_t reserved;
    struct clops_stream *stream; /* NULL is a no-op */
};

/* Every call submitted to `stream` after this starts only once all `events` completed (events
 * of any stream of the same pool). A failed or cancelled one fails those calls with
 * CLOPS_ERR_CANCELLED. The host keeps its events (they are retained as long as needed). */
struct clops_stream_wait_args {
    uint32_t struct_size;
    int32_t event_count;
    struct clops_stream *stream;
    struct clops_event *const *events;
};

struct clops_submit_args {
    uint32_t struct_size; /* sizeof(struct clops_submit_args) */
    int32_t op_index;     /* the operator, in the op_at() numbering */
    struct clops_stream *stream;
    /* The arguments, as invoke_sized takes them: read during submit only (tensor descriptors
     * and strings are copied; the host memory the tensors point to is not, see above). */
    const struct clops_arg *args;
    int32_t nargs;
    uint32_t arg_size; /* sizeof(struct clops_arg) of the host's header */
    /* Optional: events (of this pool's streams) that must complete before the call starts; a
     * failed or cancelled one fails this call with CLOPS_ERR_CANCELLED. */
    struct clops_event *const *wait_events;
    int32_t wait_count;
    int32_t cl_wait_count;
    /* Optional (interop): cl_events of the stream's context the call's device work waits for. */
    void *const *cl_wait_events;
    /* Optional: a completion callback (see above), as event_on_complete would register it. */
    clops_event_fn on_complete;
    void *user;
    struct clops_event *event; /* out: the host's until event_release */
};

struct clops_event_query_args {
    uint32_t struct_size;
    int32_t state; /* out: enum clops_event_state */
    struct clops_event *event;
    int32_t status; /* out: CLOPS_OK until the call failed or was cancelled, then why */
    int32_t reserved;
    const char *message; /* out: "" or the failure's message; valid until event_release */
    double progress;     /* out: the fraction of the call done, 0 to 1 (1 once complete) */
};

/* Waits until one (wait_all = 0) or all (1) of `events` have an outcome (complete, failed or
 * cancelled), or `timeout_ns` passed: CLOPS_OK, or CLOPS_ERR_TIMEOUT. timeout_ns < 0: no
 * limit; 0: only looks. The calls' own failures are not this function's: read them with
 * event_query. In a completion callback only timeout_ns = 0 is allowed (a wait there could
 * wait for itself): others fail with CLOPS_ERR_INVALID_ARGUMENT. */
struct clops_event_wait_args {
    uint32_t struct_size;
    int32_t count;
    struct clops_event *const *events;
    int64_t timeout_ns;
    int32_t wait_all;
    int32_t ready; /* out: with wait_all = 0, the index of an event that has its outcome */
};

/* Registers the event's completion callback (at most one per event; a second is refused). On an
 * event that has its outcome already, the callback still runs on a thread of the stream. */
struct clops_event_callback_args {
    uint32_t struct_size;
    int32_t reserved;
    struct clops_event *event;
    clops_event_fn fn;
    void *user;
};

/* Asks for the call to stop. A call still queued never starts; a running one stops at its next
 * unit of work (LU: a panel; a large GEMM: a block of C; Mandelbrot: a tile) or, past its last
 * one, before its host outputs are written. It then ends cancelled: status
 * CLOPS_ERR_CANCELLED, host outputs untouched (device buffers it writes may hold part of its
 * results). A call that has its outcome already keeps it; cancelling is never an error. */
struct clops_event_cancel_args {
    uint32_t struct_size;
    int32_t reserved;
    struct clops_event *event;
};

struct clops_event_release_args {
    uint32_t struct_size;
    int32_t reserved;
    struct clops_event *event; /* NULL is a no-op; the call goes on if it has not ended */
};

/* Interop: the call's completion as a cl_event of the stream's context, retained for the host,
 * which releases it with clReleaseEvent: it completes once the whole call has, host outputs
 * written included; its status is negative when the call failed or was cancelled. */
struct clops_event_cl_args {
    uint32_t struct_size;
    int32_t reserved;
    struct clops_event *event;
    void *cl_event; /* out */
};

/* ---- Interop and device memory (ABI 1.4) -------------------------------------------------- */

/* A pool on the host's OpenCL objects: its `cl_context` and `device_count` of its devices
 * (cl_device_id), optionally with a queue per device (in-order, of that context and device)
 * for the pool's synchronous calls; NULL queues: clops opens its own on the host's context.
 * Everything is retained while the pool lives and released, never freed, after. `config_text`
 * (optional, the libconfig text pool_create_from_string takes) sets the rest (operators,
 * profiling, device_memory_percent...); a `devices` section there is refused: the devices are
 * the host's. Device i of the pool is cl_devices[i]. */
struct clops_pool_from_cl_args {
    uint32_t struct_size;
    int32_t device_count;
    void *cl_context;
    void *const *cl_devices;
    void *const *cl_queues;  /* optional: device_count queues, or NULL */
    const char *config_text; /* optional */
    struct clops_pool *pool; /* out: the host's until pool_release */
};

/* A clops buffer over the host's cl_mem (a buffer of the pool's context, on `device`), without
 * a copy: operators read and write the cl_mem itself. clops retains it while the buffer lives
 * and releases it at buffer_release, never frees it; its bytes are not counted against the
 * pool's memory limit. `bytes` is its size (CL_MEM_SIZE). */
struct clops_buffer_wrap_args {
    uint32_t struct_size;
    int32_t device; /* the pool's device index; 0 = the primary, where buffer_create allocates */
    struct clops_pool *pool;
    void *cl_mem;
    struct clops_buffer *buffer; /* out: the host's until buffer_release */
    int64_t bytes;               /* out */
};

/* The cl_mem behind a clops buffer, created or wrapped, and its pool's cl_context: not
 * retained (the host retains them to keep them past buffer_release). */
struct clops_buffer_cl_args {
    uint32_t struct_size;
    int32_t device; /* out: the pool's device index the buffer lives on */
    struct clops_buffer *buffer;
    void *cl_mem;     /* out */
    void *cl_context; /* out */
};

/* Device memory clops holds on one device of a pool (buffers, staged operands, scratch and
 * the pool's caches), counted over every pool of the process on that cl_device_id, as the
 * limit is. Wrapped buffers (buffer_wrap_cl) are not counted. */
struct clops_memory_stats_args {
    uint32_t struct_size;
    int32_t device; /* the pool's device index */
    const struct clops_pool *pool;
    int64_t allocated_bytes; /* out: now */
    int64_t peak_bytes;      /* out: the most at once since the first pool opened the device */
    int64_t buffers;         /* out: cl_mem objects clops holds on it now */
    int64_t limit_bytes;     /* out: device_memory_percent of its global memory */
};

/* Copies `bytes` from src (from src_offset) to dst (from dst_offset), buffers of the stream's
 * pool on its device, as a call on the stream: after its earlier calls and `wait_events`, and
 * with an event of its own (out), as submit's. Overlapping ranges of one buffer are refused. */
struct clops_buffer_copy_args {
    uint32_t struct_size;
    int32_t wait_count;
    struct clops_stream *stream;
    struct clops_buffer *src;
    int64_t src_offset;
    struct clops_buffer *dst;
    int64_t dst_offset;
    int64_t bytes;
    struct clops_event *const *wait_events;
    struct clops_event *event; /* out: the host's until event_release */
};

/* Host memory registered with a pool: [data, data + bytes) is page-locked for the pool's
 * devices, so that an operator's upload of a host operand lying wholly inside one registered
 * range goes by DMA straight from the host's memory, without clops' copy into its pinned
 * staging blocks. On an H200 such an upload runs at 54 GB/s, and the copy it saves costs host
 * memory traffic that two streams otherwise share (hosts/bench/RESULTS.md). Registering costs
 * about as much as copying the range two or three times (9.6 ms for 128 MiB on the H200's
 * host, 3.6 ms on transparent huge pages) and unregistering ~3 ms: it pays for memory that many
 * calls read. Outputs still arrive through staging blocks, so that a failed or cancelled call
 * leaves them untouched. Ranges of one pool may not overlap; `flags` must be 0. The memory
 * must stay allocated until host_unregister (with the same `data`; `bytes` is not read) or
 * pool_release. Unregistering while a submitted call reads the range is allowed: the range
 * stays page-locked until that call completes. */
struct clops_host_register_args {
    uint32_t struct_size;
    int32_t flags;
    struct clops_pool *pool;
    void *data;
    int64_t bytes;
};

/* A buffer of `bytes` on device `device` of the pool (buffer_create's is on device 0, the
 * primary). A call whose device buffers all live on one device of its pool runs on that
 * device, whatever device its operator is configured to run on; buffers of two devices in one
 * call are refused, naming both. */
struct clops_buffer_create_args {
    uint32_t struct_size;
    int32_t device; /* the pool's device index */
    struct clops_pool *pool;
    int64_t bytes;
    struct clops_buffer *buffer; /* out: the host's until buffer_release */
};

/* ---- Kernels ahead of time (ABI 1.5) ------------------------------------------------------- */

/* Builds ahead of time, on every device of the pool, the kernels that the first calls of the
 * named operators in the named dtypes would otherwise build (on PoCL, seconds a program): into
 * the pool, and into the on-disk cache, from which the next process loads them in
 * milliseconds. It runs each operator once per dtype on each device on small operands of its
 * own, in every variant that chooses a kernel of its own (each reduction and axis; gemm once
 * more at a size that takes its large tiles, 2048 x 2048 by 1), counted in no statistics but
 * these. Calls of other shapes may still build a program of their own on first use (an LU on
 * a GPU whose panels are narrowed for a tall matrix; gemm's TF32 precisions, which are opt-in).
 * Mandelbrot runs once per precision on each side of the pool's split (its GPUs, its CPU
 * devices), every device of the side taking part. Refused, with nothing built: an unknown
 * operator name, a dtype none of the named operators takes, flags other than 0. */
struct clops_prebuild_args {
    uint32_t struct_size;
    int32_t flags; /* 0 */
    struct clops_pool *pool;
    const char *const *ops; /* op_count operator names (clops ops); NULL: every operator */
    int32_t op_count;
    /* dtype_count dtypes (enum clops_dtype; mandelbrot: f32 and f64 are its precisions); NULL:
     * every dtype each operator takes. An operator is built for those of them it takes. */
    int32_t dtype_count;
    const int32_t *dtypes;
    /* out: programs this call compiled from source and loaded from the on-disk cache, and the
     * time that took (what pool_stats counts, over the call: another thread's builds meanwhile
     * are in it too) */
    int64_t programs_built;
    int64_t programs_loaded;
    int64_t build_ns;
    int64_t wall_ns; /* out: the whole call */
};

/* ---- Devices and statistics --------------------------------------------------------------- */

enum clops_device_type { CLOPS_DEVICE_GPU = 1, CLOPS_DEVICE_CPU = 2, CLOPS_DEVICE_OTHER = 4 };

struct clops_device_info {
    uint32_t struct_size; /* set by the host: sizeof(struct clops_device_info) */
    int32_t type;         /* enum clops_device_type */
    char name[128];
    char vendor[64];
    char platform[64];
    char driver_version[64];
    char opencl_version[64];
    int64_t global_mem_bytes;
    int64_t local_mem_bytes;
    int32_t compute_units;
    int32_t queues; /* in a pool: queues opened on it; in devices_list: 0 */
    int32_t fp64;   /* 1 when the device supports double precision */
    int32_t platform_index;
    int32_t device_index; /* within its platform */
    int32_t reserved;
};

struct clops_stats {
    uint32_t struct_size; /* set by the host: sizeof(struct clops_stats) */
    int32_t reserved;
    int64_t programs_built;  /* compiled from source by this pool */
    int64_t programs_loaded; /* loaded from the on-disk binary cache */
    int64_t cache_rejected;  /* cache entries found corrupt or stale, and rebuilt */
    int64_t calls;           /* operator calls, all operators */
    int64_t bytes_uploaded;
    int64_t bytes_downloaded;
    /* ---- Appended in ABI 1.3 (a plugin fills what the host's struct_size holds) ---- */
    int64_t build_ns; /* time spent building kernel programs: compiling them from source, or
                         loading them from the on-disk cache (wall time, summed over threads):
                         what a host subtracts from a first call to tell compilation from work */
};

struct clops_op_stats {
    uint32_t struct_size; /* set by the host: sizeof(struct clops_op_stats) */
    int32_t reserved;
    const char *name; /* the operator's name, owned by the plugin */
    int64_t calls;
    int64_t failures;
    int64_t device_ns; /* kernel time from profiling events; 0 when profiling is off */
};

/* Work one device of a pool did for operators that share work between devices (Mandelbrot's
 * tiles): how many pieces it took and how long it was busy. */
struct clops_device_stats {
    uint32_t struct_size; /* set by the host: sizeof(struct clops_device_stats) */
    int32_t reserved;
    int64_t tasks;
    int64_t busy_ns;
};

/* ---- The table ---------------------------------------------------------------------------- */

struct clops_api {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;

    /* Library version, e.g. "0.1.0"; static string. */
    const char *(*version)(void);
    /* The calling thread's last error message ("" when none); see ownership above. */
    const char *(*last_error)(void);
    /* The enum's name, e.g. "CLOPS_ERR_INVALID_ARGUMENT"; static string. */
    const char *(*status_name)(int32_t status);
    /* Process-wide log callback (NULL to remove) and the most detailed level it receives.
     * Threads and re-entry:
     * - The callback runs on the thread that logged, with no clops lock held: it may call any
     *   clops function, set_log_callback included (to replace or remove itself). Calls on
     *   different threads may run at the same time.
     * - What a thread logs while it is itself running the callback is not delivered (it would
     *   call the callback from inside itself); those nested calls work as usual, and the thread's
     *   last_error() after the callback returns is what it was before the callback ran.
     * - set_log_callback applies to every message logged after it returns. Called outside a
     *   callback, it also waits until every running call of the callbacks it replaces (on other
     *   threads) has returned: once it returns, the old callback runs nowhere and is never
     *   called again, so its `user` may be freed. Called from inside a callback it does not wait
     *   (two callbacks replacing each other would wait for each other): the old callback is never
     *   called again, but calls of it already running on other threads may still be finishing.
     *   So a callback must return, and must not wait for a thread that is in set_log_callback. */
    void (*set_log_callback)(clops_log_fn fn, void *user, int32_t max_level);

    /* Devices visible to the OpenCL ICD loader, without creating a pool. Fills up to
     * `capacity` entries of `out` (each with struct_size set by the host to its sizeof: the
     * elements lie that many bytes apart, so a host built against an older, smaller struct is
     * not overrun) and stores the total number found in *count. */
    int32_t (*devices_list)(struct clops_device_info *out, int32_t capacity, int32_t *count);

    /* Pools. *out receives a pool the host releases with pool_release(). NULL config: the
     * built-in defaults (first GPU, else the CPU device). `path` errors name the file. */
    int32_t (*pool_create_default)(struct clops_pool **out);
    int32_t (*pool_create_from_file)(const char *path, struct clops_pool **out);
    int32_t (*pool_create_from_string)(const char *config_text, struct clops_pool **out);
    /* Gives back the host's pool (NULL is a no-op). Calls running on it at that moment, on other
     * threads, finish normally: every call holds the pool from its start to its end, and each
     * buffer for as long as it lives, and the last of them frees it. Using the pool after its
     * release is a host error, as the pool may be freed already (while a call or a buffer still
     * holds it, a new call is refused with CLOPS_ERR_INVALID_ARGUMENT, and a second release
     * does nothing). */
    void (*pool_release)(struct clops_pool *pool);
    int32_t (*pool_device_count)(const struct clops_pool *pool);
    int32_t (*pool_device_info)(const struct clops_pool *pool, int32_t index,
                                struct clops_device_info *out);
    int32_t (*pool_stats)(const struct clops_pool *pool, struct clops_stats *out);
    /* Per-operator statistics, `index` in the op_at() numbering. */
    int32_t (*pool_op_stats)(const struct clops_pool *pool, int32_t index,
                             struct clops_op_stats *out);

    /* Device buffers on the pool's primary device. Offsets and sizes in bytes. Release a pool's
     * buffers before it or after it: a buffer holds its pool, which is freed once it and all its
     * buffers are released. buffer_release during a call that uses the buffer (another thread's)
     * frees it when that call ends; using a buffer after its release is a host error. */
    /* buffer_create refuses, with CLOPS_ERR_OUT_OF_DEVICE_MEMORY, a buffer that would take the
     * device past its limit (see that status above); buffer_release gives the bytes back. */
    int32_t (*buffer_create)(struct clops_pool *pool, int64_t bytes, struct clops_buffer **out);
    int32_t (*buffer_upload)(struct clops_buffer *buffer, int64_t offset, const void *src,
                             int64_t bytes);
    int32_t (*buffer_download)(struct clops_buffer *buffer, int64_t offset, void *dst,
                               int64_t bytes);
    void (*buffer_release)(struct clops_buffer *buffer); /* NULL is a no-op */
    int64_t (*buffer_size)(const struct clops_buffer *buffer);

    /* Operators. Descriptors live as long as the library. */
    int32_t (*op_count)(void);
    const struct clops_op *(*op_at)(int32_t index);      /* NULL when out of range */
    const struct clops_op *(*op_find)(const char *name); /* NULL (and NOT_FOUND) if unknown */
    int32_t (*op_index)(const struct clops_op *op);      /* -1 when not one of ours */
    /* Checks every argument against the descriptor, then runs the operator as op->entry does.
     * A rejected call does nothing. `args` are ABI 1.1's clops_arg: this is
     * invoke_sized(pool, op, args, nargs, CLOPS_ARG_SIZE_1_1), kept for the hosts built before
     * it; a host built against 1.2 or later calls invoke_sized when the table has it. */
    int32_t (*invoke)(struct clops_pool *pool, const struct clops_op *op,
                      const struct clops_arg *args, int32_t nargs);

    /* ---- Appended in ABI 1.1 (check with CLOPS_API_HAS) ---- */
    /* Per-device work counters, `index` in the pool's device numbering. */
    int32_t (*pool_device_stats)(const struct clops_pool *pool, int32_t index,
                                 struct clops_device_stats *out);

    /* ---- Appended in ABI 1.2 (check with CLOPS_API_HAS) ---- */
    /* invoke() on an array whose elements lie `arg_size` bytes apart: the host passes
     * sizeof(struct clops_arg) of the header it was built with. Of each element the plugin
     * reads the members that fit in both arg_size and its own struct clops_arg: members the
     * host's struct lacks are taken as zero, and bytes past the plugin's struct (members of a
     * newer header) are not read, so a host that sets such a member checks abi_minor first.
     * arg_size must be a multiple of 8 and at least CLOPS_ARG_SIZE_1_1; otherwise the call
     * fails with CLOPS_ERR_ABI_MISMATCH, naming 'arg_size', and does nothing. `args` stays the
     * host's, read only during the call. */
    int32_t (*invoke_sized)(struct clops_pool *pool, const struct clops_op *op,
                            const struct clops_arg *args, int32_t nargs, uint32_t arg_size);
    /* Checks a call without running it: the same binding of `args` as invoke_sized, then every
     * check the operator makes before it touches a device, with the same status and message a
     * run would give; nothing is allocated on a device, no kernel is built, no output written,
     * and the pool's statistics do not count it. What a pipeline validator or a workflow engine
     * needs to know before it runs anything:
     * - Tensors may be descriptions: data and buffer both NULL, with dtype, rank, shape and
     *   strides (and offset 0). Their memory is not checked and they overlap nothing.
     * - `pool` may be NULL: then what depends on a device (double precision, a buffer's pool,
     *   the configured tunings) is not checked.
     * - For each output parameter of the operator (kind out or inout), in the descriptor's
     *   order, outputs[k] receives the dtype, rank and shape it must have, derived from the
     *   inputs; rank -1 where that is not known (an optional output left out, or a call
     *   refused before the inputs were checked). Written also when the call is refused (a
     *   wrong output shape, say), as far as it is known. The host owns `outputs`: `capacity`
     *   elements lying `output_size` bytes apart (sizeof its struct clops_output_spec, at least
     *   CLOPS_OUTPUT_SPEC_SIZE_1_2); the plugin writes the members that fit, sets each
     *   element's struct_size to what it wrote, and stores in *count the number of output
     *   parameters (which may exceed capacity). outputs may be NULL when capacity is 0; count
     *   may be NULL. */
    int32_t (*check_sized)(struct clops_pool *pool, const struct clops_op *op,
                           const struct clops_arg *args, int32_t nargs, uint32_t arg_size,
                           struct clops_output_spec *outputs, uint32_t output_size,
                           int32_t capacity, int32_t *count);

    /* ---- Appended in ABI 1.4 (check with CLOPS_API_HAS): non-blocking calls, above ---- */
    /* A stream on a device of the pool; it holds the pool until it is released. */
    int32_t (*stream_create)(struct clops_stream_create_args *args);
    /* Gives back the host's stream: waits until every call submitted to it has its outcome
     * and its callback has returned (not in a callback: see above), then lets go of it; its
     * threads stop once the stream's events are released too (released before, and not in a
     * callback: they have ended when stream_release returns, and the stream no longer holds its
     * pool). Events of its calls stay valid, and a callback registered on one later is still
     * delivered. Submitting to a released stream is a host error (refused while the stream
     * lives). */
    int32_t (*stream_release)(struct clops_stream_release_args *args);
    int32_t (*stream_wait)(struct clops_stream_wait_args *args);
    int32_t (*submit)(struct clops_submit_args *args);
    int32_t (*event_query)(struct clops_event_query_args *args);
    int32_t (*event_wait)(struct clops_event_wait_args *args);
    int32_t (*event_on_complete)(struct clops_event_callback_args *args);
    int32_t (*event_cancel)(struct clops_event_cancel_args *args);
    int32_t (*event_release)(struct clops_event_release_args *args);
    int32_t (*event_cl_event)(struct clops_event_cl_args *args);
    /* Interop and device memory (above). */
    int32_t (*pool_create_from_cl)(struct clops_pool_from_cl_args *args);
    int32_t (*buffer_wrap_cl)(struct clops_buffer_wrap_args *args);
    int32_t (*buffer_cl)(struct clops_buffer_cl_args *args);
    int32_t (*memory_stats)(struct clops_memory_stats_args *args);
    int32_t (*buffer_copy)(struct clops_buffer_copy_args *args);
    /* Host memory registration (above): appended after buffer_copy, so check
     * CLOPS_API_HAS(api, host_unregister) before calling either. */
    int32_t (*host_register)(struct clops_host_register_args *args);
    int32_t (*host_unregister)(struct clops_host_register_args *args);
    /* A buffer on any device of the pool (above): appended after host_unregister, so check
     * CLOPS_API_HAS(api, buffer_create_on). */
    int32_t (*buffer_create_on)(struct clops_buffer_create_args *args);

    /* ---- Appended in ABI 1.5 (check with CLOPS_API_HAS) ---- */
    /* Kernels built ahead of time (above). */
    int32_t (*pool_prebuild)(struct clops_prebuild_args *args);
};

/* The only entry symbol. Returns NULL when the plugin does not serve `abi_major` (it serves 1). */
const struct clops_api *clops_plugin_entry(uint32_t abi_major);
typedef const struct clops_api *(*clops_plugin_entry_fn)(uint32_t abi_major);

/* ---- Conveniences (static inline: nothing more is exported) -------------------------------- */

/* A rows×cols host matrix; column_major = 0 for C order, 1 for Fortran order; ld = the leading
 * dimension (elements between rows in C order, between columns in Fortran order). */
static inline struct clops_tensor clops_matrix(void *data, int32_t dtype, int64_t rows,
                                               int64_t cols, int64_t ld, int32_t column_major)
{
#ifdef __cplusplus
    struct clops_tensor t = {}; /* C++: {0} would warn of missing initializers */
#else
    struct clops_tensor t = {0};
#endif
    t.data = data;
    t.dtype = dtype;
    t.rank = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    t.strides[0] = column_major ? 1 : ld;
    t.strides[1] = column_major ? ld : 1;
    return t;
}

/* The same matrix in a device buffer. */
static inline struct clops_tensor clops_matrix_on_device(struct clops_buffer *buffer, int32_t dtype,
                                                         int64_t rows, int64_t cols, int64_t ld,
                                                         int32_t column_major)
{
    struct clops_tensor t = clops_matrix(NULL, dtype, rows, cols, ld, column_major);
    t.buffer = buffer;
    return t;
}

/* The size of `op`'s parameter descriptors as its plugin was built: `param_size`, or
 * CLOPS_PARAM_SIZE_1_1 for a plugin older than ABI 1.2. A member of struct clops_param may be
 * read only when it ends within this size. */
static inline uint32_t clops_op_param_size(const struct clops_op *op)
{
    uint32_t size = CLOPS_PARAM_SIZE_1_1;
    if (CLOPS_OP_HAS(op, param_size))
        size = op->param_size;
    return size;
}

/* Parameter `index` (0 .. param_count - 1) of `op`: what `&op->params[index]` means when the
 * plugin's struct clops_param is the host's, and stays right when either has grown. */
static inline const struct clops_param *clops_op_param(const struct clops_op *op, int32_t index)
{
#ifdef __cplusplus /* C++ hosts may build with -Wold-style-cast */
    const char *first = reinterpret_cast<const char *>(op->params);
    return reinterpret_cast<const struct clops_param *>(first + static_cast<size_t>(index) *
                                                                    clops_op_param_size(op));
#else
    const char *first = (const char *)op->params;
    return (const struct clops_param *)(const void *)(first +
                                                      (size_t)index * clops_op_param_size(op));
#endif
}

#ifdef __cplusplus
}
#endif

#endif /* CLOPS_H */
