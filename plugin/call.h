/* call.h — one lifecycle for every operator call, keyed by the operator's descriptor:
 * validate and plan (the operator's check) -> stage host operands on the device (the core) ->
 * enqueue the device work (the operator's enqueue) -> finish: download the outputs, write them
 * into host memory only once everything succeeded, record the statistics (the core).
 *
 * An operator supplies a struct op_impl (op.h): its descriptor, its check and its enqueue step
 * (and, where it keeps host results of its own, a commit step), nothing else. The typed ABI
 * entry and invoke() both end in call_run with the parameters' values in the descriptor's order.
 *
 * The next steps reuse this without change:
 * - A non-blocking submit runs check, stage and enqueue on the caller's thread (all that can
 *   reject the call happens there, before anything is queued), and returns an event for the
 *   last enqueued command; call_finish runs when that event completes (from a callback or a
 *   wait). Hence the split: enqueue only enqueues (and may wait inside where an operator needs
 *   a result to go on), and everything after it is call_finish.
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
