/* op.h — the operator interface: what an operator implements (struct op_impl: its descriptor,
 * check, enqueue and optional commit and release steps) and what those steps use (the call as
 * they see it, the outputs a check expects, the tuning tables). The lifecycle that runs the
 * steps is call.h; the core's modules that only need an operator's descriptor or settings
 * (config.c, pool.c, registry.c) include this header, not the lifecycle. */
#ifndef CLOPS_OP_H
#define CLOPS_OP_H

#include <stdatomic.h>
#include <stdint.h>

#include "pool.h"
#include "tensor.h"

enum { CALL_MAX_PARAMS = 32 };

/* Whether a parameter of `kind` is a tensor (in, out or inout). */
static inline int op_kind_is_tensor(int32_t kind)
{
    return kind == CLOPS_PARAM_TENSOR_IN || kind == CLOPS_PARAM_TENSOR_OUT ||
           kind == CLOPS_PARAM_TENSOR_INOUT;
}

/* One parameter's value, as the typed entry receives it (enums by index). */
union op_value {
    const struct clops_tensor *tensor; /* NULL: an optional tensor left out */
    const char *string;
    int64_t i64;
    double f64;
    int32_t i32;
};

/* How the core stages a tensor parameter before enqueue. The default follows the descriptor's
 * kind (in: upload; out: no upload, download; inout: both); a check may change it (gemm's C is
 * only written when beta = 0) or take a tensor out of the core's hands (STAGE_NONE: not staged,
 * or staged by the operator itself). Device tensors are used in place whatever it says. */
enum op_stage { STAGE_NONE = 0, STAGE_IN = 1, STAGE_OUT = 2, STAGE_INOUT = 3 };

struct op_impl;

/* What an output parameter must be, as a check derives it from the inputs (rank -1: unknown). */
struct op_output {
    int32_t dtype, rank;
    int64_t shape[CLOPS_MAX_RANK];
};

/* What the host can ask of a running call and learn from it: a stop, and how far it got. Owned
 * by the call's event for a submitted call (ABI 1.4), by the call itself for a synchronous one
 * (never stopped). Read and written by any thread. */
struct call_control {
    atomic_int cancel; /* 1: the host asked the call to stop (event_cancel) */
    atomic_llong done; /* units of work done, of `total` (0: not known) */
    atomic_llong total;
    int32_t submitted; /* 1: a submitted call, which may be cancelled; 0: synchronous */
    int32_t part;      /* 1: a part of a split call (call_split.c): an end marker of its own, as a
                          submitted call's, but never paced: its caller starts the other parts
                          after it returns */
};

struct op_call {
    struct clops_pool *pool;
    const struct op_impl *impl;
    const union op_value *values; /* the descriptor's params, in order: the call's copies, tensor
                                     descriptors and strings included, never the host's */
    struct pool_device *dev;      /* where the call runs: the operator's configured device;
                                     NULL in a check without a pool (then pool is NULL too) */
    int32_t checking;             /* 1: a check only (call_check_index); nothing will run */
    /* Set by check. */
    void *plan;            /* impl->plan_size bytes, zeroed before check */
    int32_t nothing_to_do; /* a valid call with no device work (empty extents, C = 1 * C) */
    int8_t stage[CALL_MAX_PARAMS];
    struct op_output expect[CALL_MAX_PARAMS]; /* by parameter; what check_sized reports */
    /* Set by the core for enqueue. */
    cl_command_queue queue;
    struct staged_tensor staged[CALL_MAX_PARAMS];
    int64_t device_ns;            /* device time, when profiling: enqueue adds its kernels' */
    struct pool_work work;        /* enqueued and not yet waited for: launches, scratch (pool.h) */
    struct call_control *control; /* never NULL once the call runs */
    /* A piece of a split call that computes a slab of the reduction (op_part.carry): its carry,
     * and its part's partial sums on its device, laid out as its output (the same offsets and
     * strides, in a buffer of the output's). 0 and NULL for any other call. */
    int32_t carry;
    cl_mem sums;
};

/* op_part.carry: the piece starts from the sums the slab before left (IN), leaves its sums for
 * the slab after instead of writing its output (OUT). */
enum { OP_CARRY_IN = 1, OP_CARRY_OUT = 2 };

/* One part of a call split across devices (op_impl's cut): the parameter values of a call of
 * the same operator on a piece of the work, its tensors pointing into `tensors`, and its share
 * of the work in flops. */
struct op_part {
    union op_value values[CALL_MAX_PARAMS];
    struct clops_tensor tensors[CALL_MAX_PARAMS];
    double flops;
    uint32_t unread; /* bit p: the part reads nothing of parameter p (GEMM's C when beta is 0) */
    /* A piece that computes one slab of the reduction (a GEMM's K) of its block of the output:
     * OP_CARRY_* bits (its output is written by the last slab only); 0: the whole reduction. */
    int32_t carry;
};

struct op_impl {
    const struct clops_op *desc;
    size_t plan_size; /* the call allocates it with the call's other state (call.c) */
    /* Every check of the arguments, before anything touches the device; fills the plan and may
     * change call->stage or set nothing_to_do. A rejected call changes nothing. */
    int32_t (*check)(struct op_call *call);
    /* The device work, on call->queue with the staged operands (call->staged[i].mem and
     * .offset for tensor parameter i). Returns once it is enqueued: the core enqueues the
     * downloads behind it and waits once (launches: pool_launch_kernel into call->work). */
    int32_t (*enqueue)(struct op_call *call);
    /* Optional: writes results the operator keeps itself (downloaded by its enqueue) into host
     * memory. Runs after every download succeeded, and cannot fail. */
    void (*commit)(struct op_call *call);
    /* Optional: frees what check or enqueue allocated in the plan; runs on every path. */
    void (*release)(struct op_call *call);
    /* Optional: the settings it declares (config.h), read from operators.<name> and checked
     * when a pool is created; NULL: none. */
    const struct op_settings *settings;
    /* Optional: after the call's one wait, before its commit: checks what the device produced
     * and the host could not know at enqueue (lu_solve's device pivots) and may refuse the
     * call, which then writes no host output. */
    int32_t (*verify)(struct op_call *call);
    /* Optional: cuts a checked call into `count` parts whose shares of the work are `shares`
     * (summing to 1), each a call of the same operator on disjoint pieces of the outputs, which
     * together compute what the call does; the parts made (fewer where the work does not cut
     * so finely, 1 or less: run the call whole). Only calls the operator can cut this way are
     * cut (a GEMM on host operands, say); the others return 0. */
    int32_t (*cut)(const struct op_call *call, int32_t count, const double *shares,
                   struct op_part *parts);
    /* Optional, with cut: cuts one of its parts into at most `room` pieces (returns how many
     * it made, 1 or less: none) whose blocks of the part's operands move in about `moves`
     * blocks, each read by the pieces that need it, so that a part whose operands move from
     * another device computes each piece while the next one's blocks move. `grid` 1: the
     * pieces may cut every operand (the first piece then waits for few blocks); 0: each piece
     * reads all of one operand of the part and a block of another (call_split.c). `slabs` > 1:
     * each piece may be cut further into that many slabs of the reduction, in order (carry),
     * which the part's device computes one after another into its partial sums. */
    int32_t (*pieces)(const struct op_call *call, const struct op_part *part, int32_t moves,
                      int32_t room, int grid, int32_t slabs, struct op_part *pieces);
    /* 1: its calls go across devices some other way than cut (lu and solve: getrf_multi.c).
     * An operator with neither refuses operators.<name>.devices (config.c). */
    int32_t across_devices;
};

/* The fields of an operator's descriptor (abi/clops.h) that every operator fills the same way:
 * its name, size and version, its parameter table, and its typed entry point, which must have
 * the ABI's prototype `abi_fn` (anything else is a compile error: no _Generic association).
 * What is left to write is its summary and doc. */
#define OP_DESCRIPTOR_COMMON(op_name, param_table, entry_fn, abi_fn)                               \
    .name = (op_name), OP_DESCRIPTOR_FIELDS(param_table, entry_fn, abi_fn)

/* The same but the name. Not clang-formatted: version 14 splits the association. */
/* clang-format off */
#define OP_DESCRIPTOR_FIELDS(param_table, entry_fn, abi_fn)                                       \
    .struct_size = sizeof(struct clops_op), .version = 1,                                         \
    .param_count = (int32_t)(sizeof(param_table) / sizeof((param_table)[0])),                     \
    .params = (param_table), .param_size = sizeof(struct clops_param),                            \
    .entry = (void (*)(void))_Generic(&(entry_fn), abi_fn : (entry_fn))
/* clang-format on */

/* An operator's call steps: its descriptor, the type of its plan, its check and enqueue steps,
 * and the optional commit, release (NULL: none) and settings (NULL: none). */
#define OP_IMPL(desc_, plan_type, check_, enqueue_, commit_, release_, settings_)                  \
    {                                                                                              \
        .desc = (desc_), .plan_size = sizeof(plan_type), .check = (check_), .enqueue = (enqueue_), \
        .commit = (commit_), .release = (release_), .settings = (settings_)                        \
    }

/* In a check: output parameter `param` must have `dtype`, `rank` and `shape`. Checks state it
 * as soon as the inputs it follows from are checked, before they check the output itself, so
 * that a refused call still reports it. */
void call_expect(struct op_call *call, int32_t param, int32_t dtype, int32_t rank,
                 const int64_t *shape);
/* The same: parameter `param` must be what it is (an in-place output such as LU's a). */
void call_expect_same(struct op_call *call, int32_t param);

/* ---- Cancellation and progress, for operators whose calls are long (LU, large GEMMs,
 * Mandelbrot): they check between units of work and say how far they got. ---- */

/* Whether the host asked the call to stop (only a submitted call can be asked). */
int call_cancel_requested(const struct op_call *call);
/* CLOPS_ERR_CANCELLED with "<op>: cancelled after <done> of <total> <unit>": what an operator
 * returns when it stops at a unit boundary on a request (nothing after it commits). */
int32_t call_refuse_cancelled(const struct op_call *call, int64_t done, int64_t total,
                              const char *unit);
/* `done` of `total` units of the call's work are done (event_query's progress). */
void call_progress(struct op_call *call, int64_t done, int64_t total);

/* The value of parameter `name` (a descriptor's name), for an operator's own code. */
int32_t call_param_index(const struct op_impl *impl, const char *name);

/* ---- Tuning: an operator's table of values per device, and the settings that replace them ---- */

/* Which devices a row of an operator's tuning table applies to (the row's member `match`). */
struct tuning_match {
    const char *vendor; /* case-insensitive substring of the device vendor; "" = any */
    int32_t type;       /* enum clops_device_type; 0 = any */
};

/* The index of the first row of `table` (an array of structs with a member `match`) that applies
 * to `dev`; the last row, which should match every device, when none does. */
#define CALL_TUNING_ROW(table, dev)                                                                \
    call_tuning_row((dev), &(table)[0].match, sizeof(table)[0], sizeof(table) / sizeof(table)[0])
size_t call_tuning_row(const struct pool_device *dev, const struct tuning_match *first,
                       size_t row_size, size_t rows);

/* Sets *fields[s], the int32_t member of an operator's tuning that setting s of `impl` (config.h)
 * configures, to pool_op_setting's value: the configured one, else the declared default, else,
 * for a default per device, what *fields[s] holds (the tuning table's). `count` entries; NULL: a
 * setting not in the tuning. */
void call_apply_settings(const struct clops_pool *pool, const struct op_impl *impl,
                         int32_t *const *fields, size_t count);

/* CLOPS_ERR_CONFIG for settings that are each in their range but do not go together (with the
 * device's values for those not configured): "<op>: <the configured settings>: <fmt ...>". */
int32_t call_refuse_settings(const struct clops_pool *pool, const struct op_impl *impl,
                             const char *fmt, ...) CLOPS_PRINTF(3, 4);

#endif
