/* call_split.c — a call split across the pool's devices (operators.<op>.devices,
 * call.h's call_split_run). The operator cuts the checked call into parts (op_impl's cut), one
 * per device, in shares by the devices' measured rates for it (or the configured shares); each
 * part is a call of its own on its device, whose host operands are staged to that device. The
 * devices run at once, and the parts' host outputs are committed only once every part
 * succeeded: a failed call leaves its host outputs untouched, as a whole call does. Host
 * operands are staged to each part's device from host memory, every device's by a thread of its
 * own (start_parts_at_once); device operands of another device than a part's move to buffers of
 * its own through bridges (pinned host memory, bridge.h), and its device outputs move back as
 * the part ends, unless a part failed before: never through OpenCL's own paths between devices
 * (NVIDIA's run at ~1 GB/s, a pinned transfer at ~55). A device output's blocks are written in
 * place or moved home as their parts end, so a failed call may leave some of them written (a
 * host output is never).
 *
 * A synchronous call starts its parts on the caller's thread (call_split_run); where they move
 * device operands, a thread a device of the pool's crew awaits them meanwhile, each as it ends,
 * and moves its outputs home while later parts' operands still move in (start_parts). A
 * submitted call (call_split_submit) is started by its stream's starter thread, once the
 * stream's earlier work has ended, its part on the stream's device on the stream's queue; its
 * completer thread finishes it (call_complete, call_split_finish), in the stream's order. With
 * device outputs, the stream's later jobs wait for such a call on the host before they start
 * (call_writes_back), so its starter thread awaits its parts as they start and moves their
 * outputs home, as a synchronous call does. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "call.h"
#include "config.h"
#include "error.h"
#include "platform.h"
#include "pool.h"
#include "split.h"
#include "split_crew.h"
#include "tensor.h"

static double now_ns(void)
{
    return (double)os_monotonic_ns();
}

/* The devices' shares: the configured ones, else their measured rates for the operator, else
 * (a device not measured yet) their estimated peaks. Returns the fastest measured rate where
 * the shares are the measured rates, else 0. */
static double split_shares(struct clops_pool *pool, int32_t index, const struct config_op *cfg,
                           struct pool_device **devs, int32_t f64, double *shares)
{
    const int32_t n = cfg->split_count;
    double sum = 0, fastest = 0;
    int measured = 1;
    for (int32_t i = 0; i < n; i++) {
        const double rate = pool_op_rate(pool, index, cfg->split_devices[i]);
        measured = measured && rate > 0;
        fastest = rate > fastest ? rate : fastest;
    }
    for (int32_t i = 0; i < n; i++) {
        shares[i] = cfg->share_count == n ? cfg->split_share[i]
                    : measured            ? pool_op_rate(pool, index, cfg->split_devices[i])
                                          : pool_device_peak_flops(devs[i], f64);
        sum += shares[i];
    }
    for (int32_t i = 0; i < n; i++)
        shares[i] = sum > 0 ? shares[i] / sum : 1.0 / n;
    return cfg->share_count != n && measured ? fastest : 0;
}

/* The most pieces a part is cut into (op_impl's pieces), and the most blocks of its operands
 * that move to make them (each of about split_piece_bytes, call.h). */
enum {
    SPLIT_MAX_PIECES = 32,
    SPLIT_MAX_MOVES = 16,
    SPLIT_MAX_PARTS = CONFIG_MAX_DEVICES * SPLIT_MAX_PIECES
};
int64_t split_piece_bytes = SPLIT_PIECE_BYTES;
void (*split_part_starting)(int32_t k, int32_t count) = NULL;
static atomic_llong moves_home;

int64_t split_moves_home(void)
{
    return atomic_load(&moves_home);
}

/* A part's operands that live on another device than the part's, or host inputs other parts
 * on its device read too: the buffer of its device that it reads or writes them in (`moved`;
 * `owned`: made for this part, else its device's home buffer of the operand or an earlier
 * piece's), whether it copied them there (`copied`: a later piece of the same view copies
 * nothing), the original views kept to write outputs back. */
struct part_moves {
    struct clops_buffer *moved[CALL_MAX_PARAMS];
    struct clops_tensor origin[CALL_MAX_PARAMS];
    unsigned char owned[CALL_MAX_PARAMS];
    unsigned char copied[CALL_MAX_PARAMS];
};

/* A split under way: the parts made (a device's part, or its pieces), each a call on its device,
 * the order they start in (a piece of each device in turn), and when each one's device work
 * and moves back were seen complete; the queues operands between devices move on (one per
 * device, opened for the split: a part's copy must not queue behind another part's kernels). */
struct split_state {
    int32_t count;
    struct op_part *parts; /* SPLIT_MAX_PARTS */
    int32_t order[SPLIT_MAX_PARTS];
    struct pool_device *devs[SPLIT_MAX_PARTS];
    int32_t device_index[SPLIT_MAX_PARTS];
    struct call *calls[SPLIT_MAX_PARTS];
    struct call_control controls[SPLIT_MAX_PARTS];
    double done_ns[SPLIT_MAX_PARTS];
    /* When each part's operands were on its device and when it was enqueued (the debug
     * timeline, finish_parts), from start_ns. */
    double moved_ns[SPLIT_MAX_PARTS], started_ns[SPLIT_MAX_PARTS];
    struct part_moves moves[SPLIT_MAX_PARTS];
    /* Each device's part before it was cut into pieces (group[i]: part i's, in the cut's
     * order): the whole views its pieces' blocks of each operand lie in, and the buffers of
     * its device those of other devices move into (home_at), made at the first piece that
     * needs one. */
    int32_t group[SPLIT_MAX_PARTS];
    struct clops_tensor home_view[CONFIG_MAX_DEVICES][CALL_MAX_PARAMS];
    struct clops_buffer *home[CONFIG_MAX_DEVICES][CALL_MAX_PARAMS];
    cl_command_queue transfer[CONFIG_MAX_DEVICES]; /* by pool device index */
    /* The queues outputs move home on (move_out), by pool device index: apart from the moves
     * in, which may still be under way (start_parts). */
    cl_command_queue back[CONFIG_MAX_DEVICES];
    /* A group whose pieces compute slabs of the reduction (op_part.carry): its partial sums,
     * a buffer of its home output's size and layout, and the queue its block's slabs run on,
     * in their order (each block's own, so that one block's launches overlap the next's). */
    struct clops_buffer *sums[CONFIG_MAX_DEVICES];
    cl_command_queue slab_queue[CONFIG_MAX_DEVICES];
    double plan_ns, start_ns; /* when the split was planned, when its parts began to start */
    /* The call's work, and the time its fastest device would take alone at its measured rate
     * (0: not judged, a split by configured shares or by rates not all measured yet). */
    double flops, alone_ns;
    int on_buffers; /* whether any operand is a device buffer (pool_op_split_floor) */
    /* pool_programs_made and pool_memory_made as it started: one made since is in its time */
    int64_t programs, memory;
    int32_t failed; /* the first part that failed, or -1 (under the sync's lock while parts
                     * start and are awaited side by side) */
    int awaited;    /* whether the parts were awaited as they started (start_parts) */
    /* A submitted call's: its stream's queue, which runs the part on the stream's device. */
    cl_command_queue stream_queue;
    struct pool_device *stream_dev;
};

/* ---- Device operands of another device ------------------------------------------------------- */

/* A rank-2 view with one axis of unit stride as a rectangle of `outer` rows of `inner` elements,
 * `pitch` elements apart; 0 for any other view (not moved, so the call is not split). */
static int view_rect(const struct clops_tensor *t, int64_t *outer, int64_t *inner, int64_t *pitch)
{
    if (t->rank != 2)
        return 0;
    const int unit = t->strides[1] == 1 || t->shape[1] == 1 ? 1 : t->strides[0] == 1 ? 0 : -1;
    if (unit < 0)
        return 0;
    *inner = t->shape[unit];
    *outer = t->shape[1 - unit];
    *pitch = *outer > 1 ? t->strides[1 - unit] : *inner;
    return *pitch >= *inner;
}

/* Whether every device operand of the call can move to another device (view_rect). */
static int operands_movable(const struct op_call *op)
{
    for (int32_t p = 0; p < op->impl->desc->param_count; p++) {
        const struct clops_tensor *t = op->values[p].tensor;
        int64_t outer = 0, inner = 0, pitch = 0;
        if (op_kind_is_tensor(op->impl->desc->params[p].kind) && t != NULL && t->buffer != NULL &&
            !view_rect(t, &outer, &inner, &pitch))
            return 0;
    }
    return 1;
}

/* The split's queue of `queues` (its transfer or back queues) for moving data on `dev`,
 * opened at its first use. */
static int32_t queue_on(struct clops_pool *pool, cl_command_queue *queues, struct pool_device *dev,
                        const char *op, cl_command_queue *out)
{
    int32_t d = 0;
    while (pool_device_at(pool, d) != dev)
        d++;
    int32_t status = CLOPS_OK;
    if (queues[d] == NULL)
        status = pool_open_queue(pool, dev, op, &queues[d]);
    *out = queues[d];
    return status;
}

/* The split's queue for moving data in on `dev` (move_in: the thread that starts the parts). */
static int32_t transfer_queue(struct clops_pool *pool, struct split_state *s,
                              struct pool_device *dev, const char *op, cl_command_queue *out)
{
    return queue_on(pool, s->transfer, dev, op, out);
}

/* Tensor t's rectangle as bridge_copy takes it, on `queue`. */
static struct bridge_rect rect_of(const struct clops_tensor *t, cl_command_queue queue)
{
    int64_t outer = 0, inner = 0, pitch = 0;
    view_rect(t, &outer, &inner, &pitch);
    const int64_t es = dtype_size(t->dtype);
    return (struct bridge_rect){.queue = queue,
                                .mem = t->buffer->mem,
                                .offset = (size_t)(t->offset * es),
                                .pitch = (size_t)(pitch * es)};
}

static int same_view(const struct clops_tensor *a, const struct clops_tensor *b)
{
    return a->buffer == b->buffer && a->data == b->data && a->dtype == b->dtype &&
           a->offset == b->offset && a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1] &&
           a->strides[0] == b->strides[0] && a->strides[1] == b->strides[1];
}

/* An earlier piece on part i's device (started before it) that moved input view t: its index,
 * or -1. */
static int32_t moved_before(const struct split_state *s, int32_t i, int32_t p,
                            const struct clops_tensor *t)
{
    for (int32_t k = 0; s->order[k] != i; k++) {
        const int32_t j = s->order[k];
        if (s->devs[j] == s->devs[i] && s->moves[j].copied[p] &&
            same_view(&s->moves[j].origin[p], t))
            return j;
    }
    return -1;
}

/* Where on part i's device its block t of a device operand of another device lies: in the
 * buffer of its device's whole view of the operand (home_view; made at the first piece that
 * needs it), that view packed, its rows one after another; `here` names t's place there. A
 * block outside the whole view (none that a cut makes) gets a buffer of its own. */
static int32_t home_at(struct clops_pool *pool, struct split_state *s, int32_t i, int32_t p,
                       const struct clops_tensor *t, const char *op, struct clops_tensor *here)
{
    const int32_t g = s->group[i];
    const struct clops_tensor *h = &s->home_view[g][p];
    int64_t outer = 0, inner = 0, pitch = 0;
    const int unit = h->strides[1] == 1 || h->shape[1] == 1 ? 1 : 0;
    const int64_t at = t->offset - h->offset;
    const int inside = h->buffer == t->buffer && h->dtype == t->dtype &&
                       view_rect(h, &outer, &inner, &pitch) && at >= 0 &&
                       at / pitch + t->shape[1 - unit] <= outer &&
                       at % pitch + t->shape[unit] <= inner &&
                       (t->shape[1 - unit] <= 1 || t->strides[1 - unit] == pitch) &&
                       (t->shape[unit] <= 1 || t->strides[unit] == 1);
    struct clops_buffer **buffer = &s->home[g][p];
    int64_t row = inside ? at / pitch : 0, column = inside ? at % pitch : 0;
    int axis = unit;
    if (!inside) {
        view_rect(t, &outer, &inner, &pitch);
        axis = t->strides[1] == 1 || t->shape[1] == 1 ? 1 : 0;
        buffer = &s->moves[i].moved[p];
        s->moves[i].owned[p] = 1;
    }
    int32_t status = CLOPS_OK;
    if (*buffer == NULL)
        status = buffer_create_kept(pool, s->device_index[i], outer * inner * dtype_size(t->dtype),
                                    buffer, op);
    s->moves[i].moved[p] = *buffer;
    *here = *t;
    here->buffer = *buffer;
    here->offset = row * inner + column;
    here->strides[axis] = 1;
    here->strides[1 - axis] = inner;
    return status;
}

/* Whether host input p of part i is read by another part on its device (the block of the cut
 * operand that every piece of a part reads, gemm_cut.c): staged to the device once, into a
 * buffer of its own that every such piece names (move_in), instead of once by each piece. */
static int host_input_shared(const struct split_state *s, int32_t i, int32_t p,
                             const struct clops_op *desc)
{
    const struct clops_tensor *t = s->parts[i].values[p].tensor;
    int64_t outer = 0, inner = 0, pitch = 0;
    if (desc->params[p].kind != CLOPS_PARAM_TENSOR_IN || t == NULL || t->buffer != NULL ||
        t->data == NULL || !view_rect(t, &outer, &inner, &pitch))
        return 0;
    for (int32_t j = 0; j < s->count; j++) {
        if (j == i || s->devs[j] != s->devs[i])
            continue;
        /* Part j's view, or, where j moved it already, the view it moved. */
        const struct clops_tensor *other =
            s->moves[j].moved[p] != NULL ? &s->moves[j].origin[p] : s->parts[j].values[p].tensor;
        if (other != NULL && same_view(other, t))
            return 1;
    }
    return 0;
}

/* Moves part i's device operands of other devices to its device (home_at; their contents
 * through bridges; outputs-only ones and those it does not read left unwritten), and stages
 * its host inputs that other parts on its device read too (host_input_shared) into a buffer
 * of their own: the part's views then name those. An input an earlier piece moved is not moved
 * again. */
static int32_t move_in(struct clops_pool *pool, struct split_state *s, int32_t i,
                       const struct clops_op *desc)
{
    struct op_part *part = &s->parts[i];
    struct part_moves *mv = &s->moves[i];
    int32_t status = CLOPS_OK;
    for (int32_t p = 0; p < desc->param_count && status == CLOPS_OK; p++) {
        const struct clops_tensor *view = part->values[p].tensor;
        const int host = host_input_shared(s, i, p, desc);
        if (!host && (!op_kind_is_tensor(desc->params[p].kind) || view == NULL ||
                      view->buffer == NULL || view->buffer->dev == s->devs[i]))
            continue;
        /* The part's own copy of the view, which it is made to name. */
        struct clops_tensor *t = &part->tensors[p];
        *t = *view;
        part->values[p].tensor = t;
        mv->origin[p] = *t;
        const int read =
            desc->params[p].kind != CLOPS_PARAM_TENSOR_OUT && !(part->unread & (1u << p));
        const int32_t earlier = read ? moved_before(s, i, p, t) : -1;
        int64_t outer = 0, inner = 0, pitch = 0;
        view_rect(t, &outer, &inner, &pitch);
        const int64_t es = dtype_size(t->dtype);
        if (host) { /* staged through the pool's pinned blocks, waited for, or an earlier one's */
            if (earlier >= 0) {
                *t = *s->parts[earlier].values[p].tensor;
                mv->moved[p] = s->moves[earlier].moved[p];
                continue;
            }
            status = buffer_create_kept(pool, s->device_index[i], outer * inner * es, &mv->moved[p],
                                        desc->name);
            if (status != CLOPS_OK)
                break;
            mv->owned[p] = 1;
            struct clops_tensor here = *t;
            here.data = NULL;
            here.buffer = mv->moved[p];
            here.offset = 0;
            const int unit = t->strides[1] == 1 || t->shape[1] == 1 ? 1 : 0;
            here.strides[unit] = 1;
            here.strides[1 - unit] = inner;
            cl_command_queue to = NULL;
            status = transfer_queue(pool, s, s->devs[i], desc->name, &to);
            if (status == CLOPS_OK)
                status = tensor_upload_packed(pool, s->devs[i], to, t, here.buffer->mem, desc->name,
                                              desc->params[p].name);
            mv->copied[p] = status == CLOPS_OK;
            *t = here;
            continue;
        }
        struct clops_tensor here;
        status = home_at(pool, s, i, p, t, desc->name, &here);
        cl_command_queue from = NULL, to = NULL;
        if (status == CLOPS_OK)
            status = transfer_queue(pool, s, t->buffer->dev, desc->name, &from);
        if (status == CLOPS_OK)
            status = transfer_queue(pool, s, s->devs[i], desc->name, &to);
        if (status == CLOPS_OK && read && earlier < 0) {
            const struct bridge_rect src = rect_of(t, from), dst = rect_of(&here, to);
            status = bridge_copy(pool, &src, &dst, (size_t)outer, (size_t)(inner * es), desc->name);
            mv->copied[p] = status == CLOPS_OK;
        }
        *t = here;
    }
    return status;
}

/* Writes part i's moved outputs back into the device buffers they came from, on the split's
 * back queues (one thread at a time: await_group's home lock). */
static int32_t move_out(struct clops_pool *pool, struct split_state *s, int32_t i,
                        const struct clops_op *desc)
{
    struct part_moves *mv = &s->moves[i];
    int32_t status = CLOPS_OK;
    if (s->parts[i].carry & OP_CARRY_OUT) /* its sums are for the next slab: no output written */
        return CLOPS_OK;
    for (int32_t p = 0; p < desc->param_count && status == CLOPS_OK; p++) {
        if (mv->moved[p] == NULL || desc->params[p].kind == CLOPS_PARAM_TENSOR_IN)
            continue;
        const struct clops_tensor *origin = &mv->origin[p], *here = s->parts[i].values[p].tensor;
        int64_t outer = 0, inner = 0, pitch = 0;
        view_rect(origin, &outer, &inner, &pitch);
        cl_command_queue from = NULL, to = NULL;
        status = queue_on(pool, s->back, s->devs[i], desc->name, &from);
        if (status == CLOPS_OK)
            status = queue_on(pool, s->back, origin->buffer->dev, desc->name, &to);
        if (status == CLOPS_OK) {
            const struct bridge_rect src = rect_of(here, from), dst = rect_of(origin, to);
            status = bridge_copy(pool, &src, &dst, (size_t)outer,
                                 (size_t)(inner * dtype_size(origin->dtype)), desc->name);
        }
        atomic_fetch_add(&moves_home, status == CLOPS_OK);
    }
    return status;
}

/* The moved buffers and the transfer queues let go (the parts are over). */
static void moves_release(struct split_state *s)
{
    for (int32_t i = 0; i < SPLIT_MAX_PARTS; i++)
        for (int32_t p = 0; p < CALL_MAX_PARAMS; p++)
            if (s->moves[i].owned[p])
                buffer_release(s->moves[i].moved[p]);
    for (int32_t g = 0; g < CONFIG_MAX_DEVICES; g++) {
        for (int32_t p = 0; p < CALL_MAX_PARAMS; p++)
            buffer_release(s->home[g][p]);
        buffer_release(s->sums[g]);
    }
    for (int32_t d = 0; d < CONFIG_MAX_DEVICES; d++) {
        if (s->transfer[d] != NULL)
            clReleaseCommandQueue(s->transfer[d]);
        if (s->back[d] != NULL)
            clReleaseCommandQueue(s->back[d]);
    }
}

/* "<op>: part i of n, on device d ('name'): <message>" into the parent's error. */
static void fail_parent(struct call *call, const struct split_state *s, int32_t i, int32_t status,
                        const char *message)
{
    char text[ERR_MESSAGE_MAX];
    snprintf(text, sizeof text, "%s: part %d of %d, on device %d ('%s'): %s",
             call_op(call)->impl->desc->name, (int)i + 1, (int)s->count, (int)s->device_index[i],
             pool_device_info(s->devs[i])->name, message);
    call_fail(call, status, text);
}

/* The parts' start and their awaiting, side by side or one after the other: `lock` guards
 * s->failed (and the parent's error) and `upto`, the positions of the order the starter is
 * done with (each part there started, or never to be); `progress` tells of its growth. Where
 * the parts are awaited only once all started, upto is s->count from the first. */
struct split_sync {
    os_mutex lock;
    os_cond progress;
    int32_t upto;
    os_mutex home; /* held for a move home (move_out): the back queues are shared */
};

/* A sync of locks of no resources (nothing to fail), nothing started yet. */
#define SPLIT_SYNC_INIT                                                                            \
    {                                                                                              \
        .lock = OS_MUTEX_INIT, .progress = OS_COND_INIT, .home = OS_MUTEX_INIT                     \
    }

static void sync_destroy(struct split_sync *sync)
{
    os_mutex_destroy(&sync->home);
    os_cond_destroy(&sync->progress);
    os_mutex_destroy(&sync->lock);
}

/* Notes part i's failure as the call's, unless one was noted before; under the sync's lock. */
static void note_failure(struct call *call, struct split_state *s, struct split_sync *sync,
                         int32_t i, int32_t status, const char *message)
{
    os_mutex_lock(&sync->lock);
    if (s->failed < 0) {
        s->failed = i;
        fail_parent(call, s, i, status, message);
    }
    os_mutex_unlock(&sync->lock);
}

/* One device's parts awaited in their order by one thread (await_parts). */
struct await_group {
    struct call *call;
    struct split_state *s;
    struct pool_device *dev;
    struct split_sync *sync;
};

static void await_group(void *arg)
{
    struct await_group *g = arg;
    struct split_state *s = g->s;
    struct op_call *op = call_op(g->call);
    for (int32_t k = 0; k < s->count; k++) {
        const int32_t i = s->order[k];
        if (s->devs[i] != g->dev)
            continue;
        os_mutex_lock(&g->sync->lock);
        while (g->sync->upto <= k) /* part i not started yet */
            os_cond_wait(&g->sync->progress, &g->sync->lock);
        os_mutex_unlock(&g->sync->lock);
        if (s->calls[i] == NULL)
            continue;
        int32_t status = call_await(s->calls[i]); /* the part's own wait for its end marker */
        const char *message = call_error_of(s->calls[i])->message;
        os_mutex_lock(&g->sync->lock);
        const int go_on = s->failed < 0;
        os_mutex_unlock(&g->sync->lock);
        if (status == CLOPS_OK && go_on && !call_cancel_requested(op)) {
            os_mutex_lock(&g->sync->home);
            status = move_out(op->pool, s, i, op->impl->desc);
            os_mutex_unlock(&g->sync->home);
            message = err_last();
        }
        if (status != CLOPS_OK)
            note_failure(g->call, s, g->sync, i, status, message);
        s->done_ns[i] = now_ns();
    }
}

/* The await groups of the split's devices, one a device with parts, into groups and args
 * (CONFIG_MAX_DEVICES places each); returns their count. */
static int32_t await_groups(struct call *call, struct split_state *s, struct split_sync *sync,
                            struct await_group *groups, void **args)
{
    int32_t count = 0;
    for (int32_t k = 0; k < s->count; k++) {
        const int32_t i = s->order[k];
        int32_t g = 0;
        while (g < count && groups[g].dev != s->devs[i])
            g++;
        if (g < count)
            continue;
        groups[count] = (struct await_group){.call = call, .s = s, .dev = s->devs[i], .sync = sync};
        args[count] = &groups[count];
        count++;
    }
    return count;
}

/* Waits until every started part's device work is over, and moves each one's outputs computed
 * on another device home as soon as its part is (while the others compute), unless a part
 * failed or the host cancelled the call before; notes when each part was done so: the
 * devices' rates. A thread a device (the pool's crew) waits for that device's parts in their
 * order, each the moment it ends: the loop that polled every part's end marker, sleeping a
 * hundredth of the time waited so far (at most 1 ms), saw a 100 ms GEMM's last part up to 1 ms
 * late, and its move home with it. Moves home are made one at a time (the split's back queues
 * are shared). */
static void await_parts(struct call *call, struct split_state *s)
{
    struct split_sync sync = SPLIT_SYNC_INIT;
    sync.upto = s->count; /* every part started, or never to be */
    struct await_group groups[CONFIG_MAX_DEVICES];
    void *args[CONFIG_MAX_DEVICES];
    const int32_t count = await_groups(call, s, &sync, groups, args);
    split_crew_run(pool_split_crew(call_op(call)->pool), await_group, args, count);
    sync_destroy(&sync);
}

/* Part i, a slab of the reduction: its call given its carry and its group's partial sums, a
 * buffer like the group's home output (made at the group's first slab), which the operator
 * indexes as it does the output. Its output must lie in that home buffer. */
static int32_t carry_sums(struct clops_pool *pool, struct split_state *s, int32_t i,
                          const struct clops_op *desc)
{
    const int32_t g = s->group[i];
    int32_t out = -1;
    for (int32_t p = 0; p < desc->param_count && out < 0; p++)
        if (desc->params[p].kind != CLOPS_PARAM_TENSOR_IN &&
            op_kind_is_tensor(desc->params[p].kind))
            out = p;
    if (out < 0 || s->home[g][out] == NULL || s->moves[i].moved[out] != s->home[g][out])
        return err_set(CLOPS_ERR_INTERNAL,
                       "%s: a slab of the reduction whose output is not in its part's home buffer",
                       desc->name);
    int32_t status = CLOPS_OK;
    if (s->sums[g] == NULL)
        status = buffer_create_kept(pool, s->device_index[i], s->home[g][out]->bytes, &s->sums[g],
                                    desc->name);
    if (status != CLOPS_OK)
        return status;
    struct op_call *op = call_op(s->calls[i]);
    op->carry = s->parts[i].carry;
    op->sums = s->sums[g]->mem;
    return CLOPS_OK;
}

/* Prepares and starts part i on its device: 0, or the failure (the part's message in the
 * thread's error). */
static int32_t start_part(struct clops_pool *pool, int32_t index, const struct clops_op *desc,
                          struct split_state *s, int32_t i)
{
    struct call_control *control = &s->controls[i];
    atomic_init(&control->cancel, 0);
    atomic_init(&control->done, 0);
    atomic_init(&control->total, 0);
    control->submitted = 0;
    control->part = 1; /* an end marker of its own, never paced */
    int32_t status = move_in(pool, s, i, desc);
    s->moved_ns[i] = now_ns() - s->start_ns;
    if (status == CLOPS_OK)
        status = call_prepare(pool, index, s->devs[i], s->parts[i].values, &s->calls[i]);
    if (status == CLOPS_OK && s->parts[i].carry != 0)
        status = carry_sums(pool, s, i, desc);
    if (status != CLOPS_OK)
        return status;
    call_mark_part(s->calls[i]);
    call_set_control(s->calls[i], control);
    cl_command_queue queue =
        s->devs[i] == s->stream_dev ? s->stream_queue : pool_acquire_queue(s->devs[i]);
    if (s->parts[i].carry != 0) { /* a block's slabs in their order, on one queue */
        const int32_t g = s->group[i];
        if (!(s->parts[i].carry & OP_CARRY_IN)) /* its first: the queue taken */
            s->slab_queue[g] = queue;
        queue = s->slab_queue[g];
    }
    status = call_start(s->calls[i], queue);
    /* Submitted to the device now: its end marker is waited for later (await_parts), and a driver
     * may hold unflushed commands back until a wait (NVIDIA's does). */
    clFlush(queue);
    s->started_ns[i] = now_ns() - s->start_ns;
    return status;
}

/* Whether a part names a device operand of another device than its own: its moves share the
 * split's transfer queues and read the pieces moved before it (borrow_moved). */
static int any_moves(const struct op_call *op, const struct split_state *s)
{
    for (int32_t i = 0; i < s->count; i++)
        for (int32_t p = 0; p < op->impl->desc->param_count; p++) {
            const struct clops_tensor *t = s->parts[i].values[p].tensor;
            if (op_kind_is_tensor(op->impl->desc->params[p].kind) && t != NULL &&
                t->buffer != NULL && t->buffer->dev != s->devs[i])
                return 1;
        }
    return 0;
}

/* One device's parts, started in their order by one thread (start_parts). */
struct start_group {
    struct call *call;
    struct split_state *s;
    struct pool_device *dev;
    atomic_int *stop; /* set by the group that fails: the others start nothing more */
    int32_t failed;   /* the part that failed, or -1 */
    int32_t status;
    char *message; /* its message; NULL without host memory for it */
};

static void start_group(void *arg)
{
    struct start_group *g = arg;
    struct split_state *s = g->s;
    struct op_call *op = call_op(g->call);
    for (int32_t k = 0; k < s->count && !atomic_load(g->stop); k++) {
        const int32_t i = s->order[k];
        if (s->devs[i] != g->dev)
            continue;
        const int32_t status = start_part(op->pool, call_index(g->call), op->impl->desc, s, i);
        if (status != CLOPS_OK) {
            g->failed = i;
            g->status = status;
            g->message =
                strdup(s->calls[i] != NULL ? call_error_of(s->calls[i])->message : err_last());
            atomic_store(g->stop, 1);
            return;
        }
    }
}

/* Starts the parts on every device at once, a thread a device (the pool's crew, split_crew.h):
 * host operands are staged to each device by its own thread, through its own host copier, so
 * that the devices' uploads overlap (one thread staged them in turn, and two H200s multiplied
 * host operands at N = 16384 slower than one). Only parts that move no device operand: moves
 * share the split's transfer queues and borrow earlier pieces' buffers. 0 when not so started
 * (one device, or moves): start_parts starts them in turn. */
static int start_parts_at_once(struct call *call, struct split_state *s)
{
    struct op_call *op = call_op(call);
    if (any_moves(op, s))
        return 0;
    struct start_group groups[CONFIG_MAX_DEVICES];
    void *args[CONFIG_MAX_DEVICES];
    atomic_int stop;
    atomic_init(&stop, 0);
    int32_t count = 0;
    for (int32_t k = 0; k < s->count; k++) {
        int32_t g = 0;
        while (g < count && groups[g].dev != s->devs[s->order[k]])
            g++;
        if (g < count)
            continue;
        if (count == CONFIG_MAX_DEVICES)
            return 0;
        groups[count] = (struct start_group){
            .call = call, .s = s, .dev = s->devs[s->order[k]], .stop = &stop, .failed = -1};
        args[count] = &groups[count];
        count++;
    }
    if (count < 2)
        return 0;
    split_crew_run(pool_split_crew(op->pool), start_group, args, count);
    /* The failure of the part that comes first in the order, as starting them in turn would. */
    const struct start_group *first = NULL;
    for (int32_t k = 0; k < s->count && first == NULL; k++)
        for (int32_t g = 0; g < count; g++)
            if (groups[g].failed == s->order[k])
                first = &groups[g];
    if (first != NULL) {
        s->failed = first->failed;
        fail_parent(call, s, first->failed, first->status,
                    first->message != NULL ? first->message : "out of host memory for its message");
    }
    for (int32_t g = 0; g < count; g++)
        free(groups[g].message);
    return 1;
}

/* Starts the parts made, each on its device, in their order, telling `sync` of each (for the
 * groups awaiting them, start_parts); s->failed and the parent's error hold the first
 * failure, after which nothing more starts. */
static void start_in_turn(struct call *call, struct split_state *s, struct split_sync *sync)
{
    struct op_call *op = call_op(call);
    for (int32_t k = 0; k < s->count; k++) {
        os_mutex_lock(&sync->lock);
        const int stop = s->failed >= 0; /* a move home failed, or an earlier start */
        os_mutex_unlock(&sync->lock);
        if (stop)
            break;
        const int32_t i = s->order[k];
        if (split_part_starting != NULL)
            split_part_starting(k, s->count);
        const int32_t status = start_part(op->pool, call_index(call), op->impl->desc, s, i);
        if (status != CLOPS_OK)
            note_failure(call, s, sync, i, status,
                         s->calls[i] != NULL ? call_error_of(s->calls[i])->message : err_last());
        os_mutex_lock(&sync->lock);
        sync->upto = k + 1;
        os_cond_broadcast(&sync->progress);
        os_mutex_unlock(&sync->lock);
    }
    os_mutex_lock(&sync->lock); /* the parts not started never will be */
    sync->upto = s->count;
    os_cond_broadcast(&sync->progress);
    os_mutex_unlock(&sync->lock);
}

/* A task of a crew run of tasks of two kinds (a crew runs one function: each says its own). */
struct crew_task {
    void (*fn)(void *);
    void *arg;
};

static void run_crew_task(void *arg)
{
    const struct crew_task *t = arg;
    t->fn(t->arg);
}

/* The starter's task (start_parts). */
struct start_task {
    struct call *call;
    struct split_state *s;
    struct split_sync *sync;
};

static void start_task(void *arg)
{
    const struct start_task *t = arg;
    start_in_turn(t->call, t->s, t->sync);
}

/* Starts the parts made, each on its device; the parent's error holds the first failure. Parts
 * that move no device operand start at once (start_parts_at_once), and are awaited later
 * (await_parts); the others in turn on the calling thread, and, with `await`, a thread a device
 * (the pool's crew) meanwhile awaits each as it ends and moves its outputs home on the back
 * queues (s->awaited), else they are awaited later too. Starting every part before awaiting any
 * left a split whose operands crossed late ending on its moves home, one after the other (two
 * H200s, GEMM f64 16384^2 on GPU 0's buffers, pieces in shells: the last operands in at 77 ms,
 * the 32 blocks of C home, 1.2 ms each, by 116.6). */
static void start_parts(struct call *call, struct split_state *s, int await)
{
    s->start_ns = now_ns();
    s->failed = -1;
    if (start_parts_at_once(call, s))
        return;
    struct split_sync sync = SPLIT_SYNC_INIT;
    struct start_task starter = {.call = call, .s = s, .sync = &sync};
    struct await_group groups[CONFIG_MAX_DEVICES];
    void *args[CONFIG_MAX_DEVICES + 1];
    const int32_t count = await ? await_groups(call, s, &sync, groups, args + 1) : 0;
    /* The starter first, the caller's own: the crew may run the groups after it, never before. */
    struct crew_task tasks[CONFIG_MAX_DEVICES + 1];
    for (int32_t t = 0; t <= count; t++) {
        tasks[t] = t == 0 ? (struct crew_task){start_task, &starter}
                          : (struct crew_task){await_group, args[t]};
        args[t] = &tasks[t];
    }
    split_crew_run(pool_split_crew(call_op(call)->pool), run_crew_task, args, count + 1);
    sync_destroy(&sync);
    s->awaited = await;
}

/* The parts awaited, their outputs of other devices moved home, then completed, committing
 * only when every one succeeded (and, for a submitted call, the host did not cancel it
 * meanwhile); each device's rate for the operator noted (its parts' work over the time until
 * its last part was done). */
static void finish_parts(struct call *call, struct split_state *s)
{
    struct op_call *op = call_op(call);
    const int32_t index = call_index(call);
    if (!s->awaited)
        await_parts(call, s);
    int32_t failed = s->failed;
    if (failed < 0 && call_cancel_requested(op)) {
        call_fail(call, CLOPS_ERR_CANCELLED,
                  "cancelled before its outputs were written (its parts ran on every device)");
        failed = s->count; /* no part's */
    }
    double flops[CONFIG_MAX_DEVICES] = {0}, busy[CONFIG_MAX_DEVICES] = {0};
    int ok[CONFIG_MAX_DEVICES] = {0}, tasks[CONFIG_MAX_DEVICES] = {0};
    for (int32_t i = 0; i < s->count; i++) {
        if (s->calls[i] == NULL)
            continue;
        /* Another part failed: this one's outputs are not to be written either. */
        if (failed >= 0 && i != failed)
            call_fail(s->calls[i], call_error_of(call)->status, "another part of the call failed");
        const int32_t status = call_complete(s->calls[i]);
        op->device_ns += call_op(s->calls[i])->device_ns;
        const int32_t d = s->device_index[i];
        flops[d] += s->parts[i].flops;
        tasks[d]++;
        busy[d] = s->done_ns[i] - s->start_ns > busy[d] ? s->done_ns[i] - s->start_ns : busy[d];
        ok[d] = ok[d] >= 0 && status == CLOPS_OK ? 1 : -1;
        call_free(s->calls[i]);
        s->calls[i] = NULL;
    }
    for (int32_t k = 0; k < s->count; k++) {
        const int32_t i = s->order[k];
        log_msg(CLOPS_LOG_DEBUG,
                "%s: part %d on device %d (%.3g flops): operands there at %.3f ms, enqueued at "
                "%.3f, done at %.3f",
                op->impl->desc->name, (int)i + 1, (int)s->device_index[i], s->parts[i].flops,
                s->moved_ns[i] / 1e6, s->started_ns[i] / 1e6,
                s->done_ns[i] > 0 ? (s->done_ns[i] - s->start_ns) / 1e6 : -1.0);
    }
    double took = 0;
    for (int32_t d = 0; d < CONFIG_MAX_DEVICES; d++) {
        if (tasks[d] == 0)
            continue;
        took = busy[d] > took ? busy[d] : took;
        log_msg(CLOPS_LOG_DEBUG, "%s: device %d: %d parts, %.1f%% of the work, done at %.3f ms",
                op->impl->desc->name, (int)d, tasks[d], 100 * flops[d] / s->flops, busy[d] / 1e6);
    }
    /* Judged before this call's rates are noted: the fastest device's alone was the estimate.
     * Not a call that built or loaded a program (the first f64 split after f32 ones on two
     * H200s took 449 ms, its kernels' builds in it), nor one that made memory: the pinned
     * blocks and buffers of the first split of a shape (pool_memory_made). Nor are its rates
     * noted: the first split of a 16384^2 GEMM on two H200s, device operands, took 139-147 ms
     * on the device whose operands moved (its buffers made) against ~102 after, and the shares
     * of the next five calls drifted back from 43% to 47.7% of the work, every one of them
     * slower than the balanced split. Unless the split before it, of the same work, made memory
     * too: then every call of its shape does (more than the pool keeps), and that is its usual
     * time (a 32768^2 f64 GEMM on two H200s made a buffer in every call, none was noted, and
     * the shares stayed at the first call's 50%: GPU 1 ended 130 ms after GPU 0). */
    const int made = pool_memory_made(op->pool) != s->memory;
    const int again = pool_op_split_made_again(op->pool, index, made && failed < 0, s->flops,
                                               (int64_t)s->start_ns);
    const int usual = pool_programs_made(op->pool) == s->programs && (!made || again);
    if (failed < 0 && s->alone_ns > 0 && took > s->alone_ns && usual) {
        pool_op_split_lost(op->pool, index, s->on_buffers, s->flops);
        log_msg(CLOPS_LOG_DEBUG,
                "%s: the split took %.3f ms, its fastest device alone %.3f: calls of up to %.3g "
                "flops run whole",
                op->impl->desc->name, took / 1e6, s->alone_ns / 1e6, s->flops);
    }
    for (int32_t d = 0; d < CONFIG_MAX_DEVICES; d++) {
        if (tasks[d] == 0)
            continue;
        pool_record_device_work(pool_device_at(op->pool, d), tasks[d], (int64_t)busy[d]);
        if (ok[d] == 1 && busy[d] > 0 && usual)
            pool_op_rate_observe(op->pool, index, d, flops[d] / busy[d] * 1e9);
    }
    const double released = now_ns();
    moves_release(s);
    log_msg(CLOPS_LOG_DEBUG,
            "%s: planned in %.3f ms, its parts over at %.3f, completed by %.3f, released by %.3f; "
            "%lld blocks of memory made, %s",
            op->impl->desc->name, (s->start_ns - s->plan_ns) / 1e6, took / 1e6,
            (released - s->start_ns) / 1e6, (now_ns() - s->start_ns) / 1e6,
            (long long)(pool_memory_made(op->pool) - s->memory),
            usual ? "its rates noted" : "its rates not noted");
}

/* `to` made a copy of part `from`, its values naming its own tensors where `from`'s named its. */
static void part_copy(struct op_part *to, const struct op_part *from, int32_t params)
{
    if (to == from)
        return;
    *to = *from;
    for (int32_t p = 0; p < params; p++)
        if (from->values[p].tensor == &from->tensors[p])
            to->values[p].tensor = &to->tensors[p];
}

/* Bytes of a part's operands that cross the bus to or from `dev`, where cutting it into pieces
 * overlaps their moves with compute: those it reads from device buffers of other devices, and,
 * on a GPU (a device with DMA beside its compute units; split_devices_as_gpus in tests), the
 * host operands it reads or writes. A CPU device's host operands are not counted: its upload is
 * a copy by its own cores (upload_direct in tensor_stage.c), which pieces would not overlap. */
static int64_t moved_bytes(const struct op_call *op, const struct op_part *part,
                           const struct pool_device *dev)
{
    const int host_moves = split_devices_as_gpus || pool_device_info(dev)->type != CLOPS_DEVICE_CPU;
    int64_t bytes = 0;
    for (int32_t p = 0; p < op->impl->desc->param_count; p++) {
        const int32_t kind = op->impl->desc->params[p].kind;
        const struct clops_tensor *t = part->values[p].tensor;
        int64_t outer = 0, inner = 0, pitch = 0;
        if (!op_kind_is_tensor(kind) || t == NULL || !view_rect(t, &outer, &inner, &pitch))
            continue;
        const int read = kind != CLOPS_PARAM_TENSOR_OUT && !(part->unread & (1u << p));
        const int crosses = t->buffer != NULL ? t->buffer->dev != dev && read
                                              : host_moves && t->data != NULL &&
                                                    (read || kind != CLOPS_PARAM_TENSOR_IN);
        bytes += crosses ? outer * inner * dtype_size(t->dtype) : 0;
    }
    return bytes;
}

/* Whether a part reads a device buffer of another device than its own `dev`: its pieces may
 * cut its own block of an operand too (op_impl's pieces, `grid`), each block moved once into
 * its device's home buffer (home_at). A part on host operands stays in bands, each staging its
 * own block as it starts: the configuration measured (two H200s, 16384^2 f32 on host operands,
 * 16 bands a GPU: 161 ms, 2.12x one GPU); a grid there was measured only in a first call (558
 * ms with its memory made, against 1053 for the bands'), not warm. */
static int reads_other_device(const struct op_call *op, const struct op_part *part,
                              const struct pool_device *dev)
{
    for (int32_t p = 0; p < op->impl->desc->param_count; p++) {
        const struct clops_tensor *t = part->values[p].tensor;
        if (op_kind_is_tensor(op->impl->desc->params[p].kind) &&
            op->impl->desc->params[p].kind != CLOPS_PARAM_TENSOR_OUT && t != NULL &&
            t->buffer != NULL && t->buffer->dev != dev)
            return 1;
    }
    return 0;
}

/* Whether every output of the part is a buffer of another device than `dev` (moved into a home
 * buffer on `dev` and home again after the part: where its pieces may compute slabs of the
 * reduction into partial sums laid out as that buffer). */
static int outputs_move_home(const struct op_call *op, const struct op_part *part,
                             const struct pool_device *dev)
{
    int any = 0;
    for (int32_t p = 0; p < op->impl->desc->param_count; p++) {
        const struct clops_tensor *t = part->values[p].tensor;
        if (!op_kind_is_tensor(op->impl->desc->params[p].kind) ||
            op->impl->desc->params[p].kind == CLOPS_PARAM_TENSOR_IN || t == NULL)
            continue;
        if (t->buffer == NULL || t->buffer->dev == dev)
            return 0;
        any = 1;
    }
    return any;
}

/* The split's parts from the cut's `cut` (one per device, in cfg's order, those with no work
 * left out): a part whose operands move from another device cut into pieces of about
 * SPLIT_PIECE_BYTES moved (op_impl's pieces), and the order they start in, a piece of each
 * device in turn. s->parts holds the cut's parts and SPLIT_MAX_PARTS places. */
static void cut_pieces(const struct op_call *op, const struct config_op *cfg,
                       struct pool_device *const *devs, struct split_state *s)
{
    const int32_t params = op->impl->desc->param_count;
    struct op_part *cut = malloc((size_t)cfg->split_count * sizeof *cut);
    int32_t first[CONFIG_MAX_DEVICES + 1] = {0}, groups = 0;
    if (cut != NULL)
        for (int32_t i = 0; i < cfg->split_count; i++)
            part_copy(&cut[i], &s->parts[i], params);
    for (int32_t i = 0; i < cfg->split_count; i++) {
        const struct op_part *part = cut != NULL ? &cut[i] : &s->parts[i];
        if (part->flops <= 0)
            continue;
        first[groups] = s->count;
        for (int32_t p = 0; p < params; p++)
            if (op_kind_is_tensor(op->impl->desc->params[p].kind) && part->values[p].tensor != NULL)
                s->home_view[groups][p] = *part->values[p].tensor;
        const int64_t moved = moved_bytes(op, part, devs[i]);
        int64_t moves = op->impl->pieces != NULL && cut != NULL && split_piece_bytes > 0
                            ? moved / split_piece_bytes
                            : 0;
        moves = moves > SPLIT_MAX_MOVES ? SPLIT_MAX_MOVES : moves;
        const int grid = reads_other_device(op, part, devs[i]);
        const int32_t slabs = grid && outputs_move_home(op, part, devs[i]) ? cfg->split_slabs : 0;
        int32_t made = moves >= 2 ? op->impl->pieces(op, part, (int32_t)moves, SPLIT_MAX_PIECES,
                                                     grid, slabs, &s->parts[s->count])
                                  : 0;
        if (made < 2) {
            part_copy(&s->parts[s->count], part, params);
            made = 1;
        } else { /* the pieces with work, together */
            int32_t kept = s->count;
            for (int32_t q = s->count; q < s->count + made; q++)
                if (s->parts[q].flops > 0)
                    part_copy(&s->parts[kept++], &s->parts[q], params);
            made = kept - s->count;
        }
        for (int32_t q = s->count; q < s->count + made; q++) {
            s->devs[q] = devs[i];
            s->device_index[q] = cfg->split_devices[i];
            s->group[q] = groups;
        }
        s->count += made;
        groups++;
    }
    first[groups] = s->count;
    free(cut);
    int32_t k = 0;
    for (int32_t round = 0; k < s->count; round++)
        for (int32_t g = 0; g < groups; g++)
            if (first[g] + round < first[g + 1])
                s->order[k++] = first[g] + round;
}

/* The split of a checked call across the devices of operators.<op>.devices, its parts made
 * (NULL: not split). */
static struct split_state *split_plan(struct call *call)
{
    const double plan_ns = now_ns();
    struct op_call *op = call_op(call);
    const int32_t index = call_index(call);
    const struct config_op *cfg = pool_op_split(op->pool, index);
    if (cfg == NULL || op->impl->cut == NULL || op->nothing_to_do || !operands_movable(op) ||
        call_cancel_requested(op))
        return NULL;
    /* Double precision when any tensor of the call is f64: the peak estimates use it. Whether
     * any is a device buffer: such calls have a split floor of their own. */
    int32_t f64 = 0;
    int on_buffers = 0;
    for (int32_t i = 0; i < op->impl->desc->param_count; i++) {
        const struct clops_tensor *t = op->values[i].tensor;
        if (!op_kind_is_tensor(op->impl->desc->params[i].kind) || t == NULL)
            continue;
        f64 = f64 || t->dtype == CLOPS_F64;
        on_buffers = on_buffers || t->buffer != NULL;
    }
    struct pool_device *devs[CONFIG_MAX_DEVICES];
    double fastest = 0;
    for (int32_t i = 0; i < cfg->split_count; i++) {
        if (cfg->split_devices[i] >= pool_device_count(op->pool))
            return NULL; /* a listed device the pool did not open (not required, absent) */
        devs[i] = pool_device_at(op->pool, cfg->split_devices[i]);
        const double peak = pool_device_peak_flops(devs[i], f64);
        fastest = peak > fastest ? peak : fastest;
    }
    double shares[CONFIG_MAX_DEVICES];
    const double fastest_rate = split_shares(op->pool, index, cfg, devs, f64, shares);
    struct split_state *s = calloc(1, sizeof *s);
    struct op_part *parts = calloc(SPLIT_MAX_PARTS, sizeof *parts);
    if (s == NULL || parts == NULL) {
        free(s);
        free(parts);
        return NULL; /* run whole */
    }
    const int32_t made = op->impl->cut(op, cfg->split_count, shares, parts);
    double flops = 0;
    for (int32_t i = 0; i < cfg->split_count; i++)
        flops += parts[i].flops;
    /* Split only a call expected to take operators.<op>.split_min_ms on its fastest device
     * (at pool_device_peak_flops): below it, one device finishes before a second one's staging
     * pays. */
    if (made < 2 || flops / fastest * 1e3 < cfg->split_min_ms) {
        free(s);
        free(parts);
        return NULL;
    }
    /* Split by the measured rates, a call of no more work than one that ran slower split than
     * its fastest device would have alone runs whole (finish_parts judges each such split): the
     * rates are a device's work over its time, in which another device's part counts what its
     * operands take to cross, and a part's crossing can cost more than its share saves (two
     * H200s, GEMM f64 8192^2 on the first one's buffers: 25.7 ms split, 22.1 on one). */
    if (fastest_rate > 0 && flops <= pool_op_split_floor(op->pool, index, on_buffers)) {
        log_msg(CLOPS_LOG_DEBUG,
                "%s: runs whole: a split of as much work (%.3g flops) was slower than one device",
                op->impl->desc->name, flops);
        free(s);
        free(parts);
        return NULL;
    }
    s->plan_ns = plan_ns;
    s->flops = flops;
    s->on_buffers = on_buffers;
    s->programs = pool_programs_made(op->pool);
    s->memory = pool_memory_made(op->pool);
    s->alone_ns = fastest_rate > 0 ? flops / fastest_rate * 1e9 : 0;
    s->parts = parts;
    cut_pieces(op, cfg, devs, s);
    log_msg(CLOPS_LOG_DEBUG, "%s: split into %d parts over %d devices", op->impl->desc->name,
            (int)s->count, (int)cfg->split_count);
    return s;
}

void call_split_finish(struct call *call)
{
    struct split_state *s = call_split_state(call);
    if (s == NULL)
        return;
    call_set_split_state(call, NULL);
    finish_parts(call, s);
    free(s->parts);
    free(s);
}

int call_split_run(struct call *call)
{
    struct split_state *s = split_plan(call);
    if (s == NULL)
        return 0;
    call_set_split_state(call, s);
    start_parts(call, s, 1);
    call_complete(call); /* the parts' end (call_split_finish), the statistics, the release */
    return 1;
}

int call_split_submit(struct call *call, cl_command_queue queue)
{
    struct split_state *s = split_plan(call);
    if (s == NULL)
        return 0;
    /* The parts on other devices are ordered after nothing on the stream's queue: the stream's
     * earlier work (its calls, and the barriers of what this call and the stream wait for) ends
     * first, waited for here, on the stream's thread that starts calls (never the host's).
     * Where that fails, the call runs whole and meets the failure itself. */
    cl_event earlier = NULL;
    cl_int rc = clEnqueueMarkerWithWaitList(queue, 0, NULL, &earlier);
    if (rc == CL_SUCCESS)
        rc = pool_wait_event(earlier);
    if (earlier != NULL)
        clReleaseEvent(earlier);
    if (rc != CL_SUCCESS) {
        free(s->parts);
        free(s);
        return 0;
    }
    cl_device_id device = NULL;
    if (clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, NULL) == CL_SUCCESS)
        for (int32_t i = 0; i < pool_device_count(call_op(call)->pool); i++)
            if (pool_device_id(pool_device_at(call_op(call)->pool, i)) == device)
                s->stream_dev = pool_device_at(call_op(call)->pool, i);
    s->stream_queue = queue;
    const struct op_call *op = call_op(call);
    for (int32_t p = 0; p < op->impl->desc->param_count; p++)
        if (op->impl->desc->params[p].kind != CLOPS_PARAM_TENSOR_IN &&
            op_kind_is_tensor(op->impl->desc->params[p].kind) && op->values[p].tensor != NULL &&
            op->values[p].tensor->buffer != NULL)
            call_set_writes_back(call);
    call_set_split_state(call, s);
    /* With device outputs, the stream's later jobs wait for this call's end on the host anyway
     * (call_writes_back): its starter thread awaits the parts as they start, and moves their
     * outputs home beside the later parts' moves in, as a synchronous call does. */
    start_parts(call, s, call_writes_back(call));
    return 1;
}
