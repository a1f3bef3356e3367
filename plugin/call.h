/* call.h — one lifecycle for every operator call, keyed by the operator's descriptor:
 * validate and plan (the operator's check) -> stage host operands on the device (the core) ->
 * enqueue the device work (the operator's enqueue) -> finish: download the outputs, write them
 * into host memory only once everything succeeded, record the statistics (the core).
 *
 * An operator supplies a struct op_impl (op.h): its descriptor, its check and its enqueue step
 * (and, where it keeps host results of its own, a commit step), nothing else. The typed ABI
 * entry and invoke() both end in call_run with the parameters' values in the descriptor's order.
 *
 * The steps, as a synchronous call runs them on the caller's thread and a submitted one (stream.c)
 * on its stream's threads: call_prepare (the check: all that can refuse a call, before anything
 * is queued), call_start (stage, enqueue, download, the end marker; nothing waits), call_complete
 * (the one wait, the commit into host memory, the statistics). Enqueue only enqueues (an
 * operator that needs a result to go on may wait inside: LU's chain, Mandelbrot's workers
 * when its tiles are shared between devices).
 * - A call split across devices: the operator's check fills its plan for the pool's devices,
 *   its enqueue hands work units to the splitter (split.h), one worker per device queue, each
 *   staging what its units read; the core's staging and finish are the same.
 */
#ifndef CLOPS_CALL_H
#define CLOPS_CALL_H

#include <stdint.h>

#include "op.h"

/* One call, in one allocation (call.c): the operator's state and plan, and copies of the
 * parameter values, tensor descriptors and strings the host passed, so that the host may reuse
 * its descriptors once the call has started (host memory the tensors point to is not copied). */
struct call;

/* A call's outcome, which any thread can read once the step that set it has returned: the
 * lifecycle copies the thread's message into it when a step fails (a step run on another
 * thread than the caller's will set it directly), and a synchronous call hands it back to the
 * calling thread's last_error at its end. The first failure is kept. */
struct call_error {
    int32_t status;
    char message[ERR_MESSAGE_MAX];
};
const struct call_error *call_error_of(const struct call *call);

/* A call of `impl` with copies of `values` (the descriptor's params, in order), in its state
 * before the check: the plan zeroed, the default staging, nothing expected. Fails with
 * CLOPS_ERR_OUT_OF_HOST_MEMORY and nothing else touched. call_free frees it. */
int32_t call_new(struct clops_pool *pool, const struct op_impl *impl, const union op_value *values,
                 struct call **out);
void call_free(struct call *call);

/* The steps, for stream.c. A call of the operator at `index` with copies of `values`, holding
 * the pool and the buffers it names, checked: refused (with the thread's message, nothing
 * allocated, the refusal counted in the statistics) or in *out. `dev` NULL: the operator's
 * configured device. */
int32_t call_prepare(struct clops_pool *pool, int32_t index, struct pool_device *dev,
                     const union op_value *values, struct call **out);
/* What the host may ask of the call and learn from it (a submitted call's event's); by default
 * the call's own, never cancelled. Before call_start. */
void call_set_control(struct call *call, struct call_control *control);
/* Enqueues the call's work on `queue` (in order) without waiting, ending with its end marker:
 * CLOPS_OK or the first failure, which the call's error then holds. call_complete follows on
 * every path (it also waits for what a failed start enqueued). */
int32_t call_start(struct call *call, cl_command_queue queue);
/* The end marker call_start enqueued (completes when the call's device work has), or NULL:
 * owned by the call until call_complete. */
cl_event call_done_marker(const struct call *call);
/* Waits for the call's work, writes host outputs when it all succeeded and the host did not
 * ask it to stop, records it in the statistics, lets go of the pool and buffers: the call's
 * status, also in its error. Run without call_start, it ends a call that never started (one
 * call_fail failed, or one cancelled). The call itself is left for call_free. */
int32_t call_complete(struct call *call);
/* call_complete's wait alone (with the cancel and verify checks after it): the call's status
 * so far. A call awaited this way commits nothing until call_complete, which then does not
 * wait again; call_fail before that keeps its outputs unwritten (a split call's other part
 * failed). */
int32_t call_await(struct call *call);
/* Fails a call before it starts with `status` and `message` (a call it waited for failed), or
 * an awaited one before its commit. */
int32_t call_fail(struct call *call, int32_t status, const char *message);
/* Whether the call writes host memory (an output tensor with data), and whether what `writer`
 * writes in host memory shares a byte with any host tensor of `other`. */
int call_writes_host(const struct call *call);
int call_host_overlaps(const struct call *writer, const struct call *other);
/* Whether a submitted split call writes device buffers once its parts are over (the blocks of
 * a device output computed on another device go home then, from the stream's completer): the
 * stream's later work waits for its outcome on the host before it starts. Set by
 * call_split_submit on the stream's starter thread, which alone reads it. */
int call_writes_back(const struct call *call);
void call_set_writes_back(struct call *call);

/* The call's operator state, its operator's index in the registry; a part of a split call
 * (call_split.c), which does not count in the statistics (its parent does). */
struct op_call *call_op(struct call *call);
int32_t call_index(const struct call *call);
void call_mark_part(struct call *call);
/* call_split.c: runs a checked synchronous call split across the devices its operator's
 * configuration names (operators.<op>.devices), when the operator cuts it (op_impl's cut):
 * 1 once the call has completed that way (its status in its error, as call_complete leaves it),
 * 0 when it is not split (nothing was done). */
int call_split_run(struct call *call);
/* call_split.c: the same for a checked submitted call, on the stream's thread that starts
 * calls: once the stream's earlier work on `queue` has ended (waited for there), its parts are
 * started, the one on the stream's device on `queue`, the others on their devices' queues, and
 * not waited for, unless it has device outputs: every later job of the stream waits for such a
 * call (call_writes_back), so they are awaited there as they start, their outputs moved home
 * (call_split_run's way). The call has no end marker of its own: its event's waiters wait on
 * the host, and the stream's later calls reading its host outputs wait for it anyway. 1 when
 * split, 0 when not (nothing done); call_complete finishes it. */
int call_split_submit(struct call *call, cl_command_queue queue);
/* call_split.c: a part of a split call whose operands move from another device is cut into
 * pieces whose operands move in blocks of about this many bytes (at most 16 blocks, 32
 * pieces), each piece computed while the next ones' blocks move, so that only the first one's
 * wait is not hidden; enough bytes that a piece still fills a device (a 16384^2 f32 GEMM's part
 * of two GPUs, 1.5 GiB moved: 8 bands of A by 3 blocks of B, pieces of about 2048 x 2475 x
 * 16384). Tests lower it, to cut small calls. */
#define SPLIT_PIECE_BYTES ((int64_t)128 << 20)
extern int64_t split_piece_bytes;
/* Tests: called on the thread that starts a split's parts, before it starts the part at
 * position k of the order of `count` (NULL: nothing); and the outputs split calls moved
 * home from another device so far (move_out). */
extern void (*split_part_starting)(int32_t k, int32_t count);
int64_t split_moves_home(void);
/* call_split.c: a split call's end, from call_complete: its parts awaited, and committed only
 * when all succeeded. */
void call_split_finish(struct call *call);
/* The split under way of a call (call_split.c's state), or NULL. */
struct split_state;
struct split_state *call_split_state(const struct call *call);
void call_set_split_state(struct call *call, struct split_state *s);

/* Runs one call of the operator at `index` in the registry with `values` (its parameters in
 * the descriptor's order), through the whole lifecycle: what invoke() calls. */
int32_t call_run_index(struct clops_pool *pool, int32_t index, const union op_value *values);
/* The same for `impl` itself: what an operator's typed entry calls. */
int32_t call_run(struct clops_pool *pool, const struct op_impl *impl, const union op_value *values);

/* Checks a call without running it (api->check_sized): pool may be NULL, tensors may be
 * descriptions (tensor_describing); expect[i] receives what output parameter i must be. */
int32_t call_check_index(struct clops_pool *pool, int32_t index, const union op_value *values,
                         struct op_output expect[CALL_MAX_PARAMS]);

#endif
