/* getrf_multi.c — getrf across the devices of operators.<op>.devices (getrf.h): the matrix's
 * block columns of NB are dealt to the devices in turn, in runs of a few (1-D block-column
 * cyclic, as MAGMA's getrf_mgpu and cuSOLVERMg lay it out, by runs rather than one at a time:
 * run_for), so that row interchanges stay on each device and only the panels and their pivots
 * cross between them.
 *
 * The call's device works in the call's matrix, where the block columns it does not own are scratch
 * once they have left it (during the first steps, the call's device updating each until it leaves:
 * plan_leaving) and until they come home; every other device holds only its own block columns, side
 * by side, after a panel's place (its columns [0, NB): see block_view). The device that owns a
 * panel's block column factors it and the host sends it, with its pivots, to the others through
 * pinned host memory (a bridge: NVIDIA's OpenCL moves data between two GPUs at ~1 GB/s on any of
 * its own paths, and pinned transfers run at ~55 GB/s), in pieces of rows, each sent on while the
 * next one downloads (the panel's crossing is on the path a step waits for where the next panel
 * lies on another device; the downloads run on a queue of their own, and so do each device's
 * uploads, beside its kernels: another device than the call's keeps two places for the panels it
 * receives, so that the next one arrives while this one is still read); then every device applies
 * the panel's interchanges to its block columns right of it, U12 = L11^-1 A12 and A22 -= L21 U12
 * there (the engine's kernels, one GEMM a block column). With a look-ahead of one panel, the owner
 * of the next block column updates that one first and factors it at once, while the devices update
 * the rest. A block column of another device comes home to the call's device once its panel is
 * factored (the panel with the broadcast, the rows above it a step later: no later step changes
 * them but for row interchanges), so that little is left to gather at the end; the call's device
 * then applies every panel's interchanges to the columns left of it (the look-ahead's order,
 * factor_lookahead's), and the factors and pivots stand as lu_factor leaves them.
 * The same kernels run on the same elements as on one device, so the pivots and info are those
 * of the one-device path.
 *
 * The host waits for each panel before sending it: a synchronous call on the caller's thread, a
 * submitted one on its stream's thread that starts calls (never the host's), after the stream's
 * earlier work on the call's queue, which every transfer from the call's device follows. Between
 * panels the call's pace (pace.h) stops a cancelled call and counts its progress. */
#include "getrf.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "call.h"
#include "config.h"
#include "platform.h"
#include "registry.h"

/* Bridges the panels and block columns cross through, in turn: a bridge is reused once the
 * uploads that read it, three transfers back, are done. */
enum { LU_MULTI_SLOTS = 3 };
/* The places another device than the call's keeps for the panels it does not own. */
enum { LU_MULTI_PLACES = 2 };
int64_t lu_panel_piece_bytes = LU_PANEL_PIECE_BYTES;

/* A panel's download in pieces of rows (panel_pieces), each marked by its own event. */
struct panel_transfer {
    struct bridge *slot;
    int32_t pieces;
    int64_t row[LU_PANEL_PIECES_MAX + 1]; /* piece p: rows row[p] .. row[p + 1] */
    cl_event done[LU_PANEL_PIECES_MAX];
    cl_event home; /* the rows above the panel downloaded for the call's device (send_home) */
};

/* Rows [0, rows) of block column `block`, downloaded into `slot` from byte `at` on (done), to be
 * uploaded into the call's matrix (send_home). */
struct home_part {
    struct bridge *slot;
    size_t at;
    int64_t block, rows;
    cl_event done;
};

/* Where block column b went (deal): its device, and its place among that device's own. */
struct dealt {
    int32_t owner;
    int64_t local;
};

struct lu_multi {
    int32_t count; /* devices; [0] is the call's: its context and matrix are the call's own */
    int64_t run;   /* block columns dealt to a device at a time (run_for), once past short_for */
    struct dealt *dealt; /* each block column's device and place (deal) */
    struct lu_ctx *ctx[CONFIG_MAX_DEVICES];
    struct lu_matrix m[CONFIG_MAX_DEVICES];
    struct lu_ctx own[CONFIG_MAX_DEVICES];      /* the other devices' contexts ([0] unused) */
    cl_command_queue queue[CONFIG_MAX_DEVICES]; /* the other devices' queues ([0] unused) */
    /* Each device's queue for its panels' downloads: they start as the panel is factored and
     * run beside the next kernels of its queue (the next panel's, where it owns that too). */
    cl_command_queue xfer[CONFIG_MAX_DEVICES];
    /* Each device's queue for what is uploaded into it during the steps (the panels and their
     * pivots, the block columns coming home to the call's device): the uploads run beside its
     * kernels, which wait for them only where they read them (ready). */
    cl_command_queue inq[CONFIG_MAX_DEVICES];
    /* Panel k's arrival on each device but its owner ([k % LU_MULTI_PLACES]): a marker of the
     * upload queue after the panel and its pivots. */
    cl_event ready[LU_MULTI_PLACES][CONFIG_MAX_DEVICES];
    /* The last reader of each panel place of the other devices than the call's: a marker of
     * the device's queue after the step's updates of the panel held there; the panel two steps
     * later comes into the place only after it. */
    cl_event place_read[LU_MULTI_PLACES][CONFIG_MAX_DEVICES];
    struct bridge slot[LU_MULTI_SLOTS];
    cl_event slot_readers[LU_MULTI_SLOTS][CONFIG_MAX_DEVICES]; /* uploads from each slot */
    int32_t next_slot;
    int32_t *piv;  /* the pivots (mn) then info: what the call's device gets at the end */
    int32_t *info; /* info of each panel's device, as downloaded with the panel */
    int64_t rows, cols, mn, nb, es;
    int32_t pivoting;
    const char *op;
    int64_t start_ns; /* when the call went across: each device's busy time runs from it */
    cl_event hold;    /* lu_multi_hold's user event, while device 1 waits on it */
    /* The other devices' block columns leave the call's matrix during the steps (depart,
     * arrive): leave[b], the step from which b's owner holds it (the call's device updates it
     * until then; -1: it crosses before the steps); per_step of them leave at each step, on
     * the call's device's queue `out`, through two bridges taken in turn. */
    int64_t *leave;
    int64_t per_step, most; /* most: the most that leave at one step */
    int64_t arrived;        /* the steps whose block columns have been uploaded */
    cl_command_queue out;
    struct bridge leave_slot[2];
    cl_event *left;                                /* each block column's download */
    cl_event leave_readers[2][CONFIG_MAX_DEVICES]; /* the uploads from each bridge */
    /* Where the host's time went (factor_steps' debug line): when the steps began, and its
     * waits for the leaving block columns' downloads. */
    int64_t steps_ns, arrive_wait_ns;
};

static int32_t owner(const struct lu_multi *m, int64_t block)
{
    return m->dealt[block].owner;
}

/* Block column b's place among those its owner keeps (other devices than the call's). */
static int64_t local_index(const struct lu_multi *m, int64_t b)
{
    return m->dealt[b].local;
}

int64_t lu_multi_run = 0;
int64_t lu_multi_short = -1;
int64_t lu_multi_hold = -1;
_Atomic int64_t lu_multi_left_in_steps = 0;

/* How many block columns go to a device at a time, `blocks` over `count` devices: the next
 * panel then lies on the device that factored this one `run - 1` times in `run`, and it is
 * factored while this one crosses (factor_steps): a panel's crossing is on the path every step
 * waits for only where the owner changes. A run of blocks / (8 count), 1 to LU_MULTI_RUN_MAX
 * (lu_multi_run where a test sets it), and never more than a device's share. */
static int64_t run_for(int64_t blocks, int32_t count)
{
    int64_t run = lu_multi_run > 0 ? lu_multi_run : blocks / (8 * (int64_t)count);
    run = run > LU_MULTI_RUN_MAX ? LU_MULTI_RUN_MAX : run;
    run = run > blocks / count ? blocks / count : run;
    return run < 1 ? 1 : run;
}

/* The block columns dealt one at a time before the runs begin: lu_multi_short where set,
 * else the first LU_MULTI_SHORT_EIGHTHS eighths of them (none where a test sets the run). */
static int64_t short_for(int64_t blocks)
{
    if (lu_multi_short >= 0)
        return lu_multi_short < blocks ? lu_multi_short : blocks;
    return lu_multi_run > 0 ? 0 : blocks * LU_MULTI_SHORT_EIGHTHS / 8;
}

/* Deals the `blocks` block columns to the devices in turn: one at a time before short_until,
 * `run` at a time after; each device keeps its own in the order dealt (local). */
static void deal(struct lu_multi *m, int64_t blocks, int64_t short_until)
{
    int64_t kept[CONFIG_MAX_DEVICES] = {0};
    int32_t d = 0;
    for (int64_t b = 0; b < blocks; d = (d + 1) % m->count) {
        const int64_t run = b < short_until ? 1 : m->run;
        for (int64_t i = 0; i < run && b < blocks; i++, b++)
            m->dealt[b] = (struct dealt){.owner = d, .local = kept[d]++};
    }
}

static int64_t block_width(const struct lu_multi *m, int64_t block)
{
    const int64_t c0 = block * m->nb;
    return m->cols - c0 < m->nb ? m->cols - c0 : m->nb;
}

/* Device d's matrix viewed so that the columns of block column b, which d owns (or panel b's
 * place, on a device that does not own it), are addressed by their column in the whole matrix:
 * the engine's steps index one matrix by global rows and columns, and the view's offset alone
 * maps those columns to where the device keeps them. The call's device keeps every column in
 * place. Another keeps its k-th own block column at columns NB (k + 2) .. and a panel it does
 * not own in one of two places, 0 .. NB for even panels and NB .. 2 NB for odd ones, so that
 * the next panel can arrive while the updates still read this one (rows stay global, so the
 * pivots apply as they are). The offset of the view may be negative; every element addressed
 * through it is in the device's matrix. */
static struct lu_matrix block_view(const struct lu_multi *m, int32_t d, int64_t b)
{
    struct lu_matrix v = m->m[d];
    if (d == 0)
        return v;
    const int64_t local = owner(m, b) == d ? (local_index(m, b) + LU_MULTI_PLACES) * m->nb
                                           : b % LU_MULTI_PLACES * m->nb;
    v.offset += local - b * m->nb;
    return v;
}

/* Block columns device d owns among the first `blocks`. */
static int64_t owned_blocks(const struct lu_multi *m, int32_t d, int64_t blocks)
{
    int64_t owned = 0;
    for (int64_t b = 0; b < blocks; b++)
        owned += owner(m, b) == d;
    return owned;
}

/* The device that holds block column b at step k: its owner from the step it left the call's
 * matrix on (leave), the call's device before. */
static int32_t holder(const struct lu_multi *m, int64_t b, int64_t k)
{
    const int32_t o = owner(m, b);
    return o != 0 && k >= m->leave[b] ? o : 0;
}

/* ---- Which calls go across devices ----------------------------------------------------------- */

/* The devices of operators.<op>.devices, the call's own first, when the call's device is one
 * of them, all are open and take its dtype, and its work would last
 * operators.<op>.split_min_ms on the fastest of them: as many of them as own two block columns
 * each, at least two; else 0. */
static int32_t devices_for(const struct op_call *call, const struct lu_ctx *ctx, int64_t rows,
                           int64_t cols, struct pool_device **devs)
{
    const struct config_op *cfg = pool_op_split(call->pool, registry_index(call->impl->desc));
    if (cfg == NULL || call->control == NULL)
        return 0;
    int32_t count = 1, mine = 0;
    devs[0] = call->dev;
    double fastest = 0;
    const int f64 = ctx->dtype == CLOPS_F64;
    for (int32_t i = 0; i < cfg->split_count; i++) {
        if (cfg->split_devices[i] >= pool_device_count(call->pool))
            return 0; /* a listed device the pool did not open */
        struct pool_device *dev = pool_device_at(call->pool, cfg->split_devices[i]);
        if (f64 && !pool_device_info(dev)->fp64)
            return 0;
        const double peak = pool_device_peak_flops(dev, f64);
        fastest = peak > fastest ? peak : fastest;
        if (dev == call->dev)
            mine = 1;
        else
            devs[count++] = dev;
    }
    const double mn = (double)(rows < cols ? rows : cols),
                 big = (double)(rows > cols ? rows : cols);
    const double flops = mn * mn * (big - mn / 3); /* LAPACK's count: 2/3 n^3 when square */
    if (!mine || count < 2 || flops / fastest * 1e3 < cfg->split_min_ms)
        return 0;
    /* Every device owns two block columns at least: below that one device finishes first. A
     * matrix of fewer block columns than the devices can own goes over the first of them it
     * fills (the call's own among them), not over one alone. */
    const int64_t usable = (cols + ctx->nb - 1) / ctx->nb / 2;
    if (usable < 2)
        return 0;
    return count < usable ? count : (int32_t)usable;
}

/* ---- Moving blocks between devices ----------------------------------------------------------- */

/* Element (r0, c0) on of device d's matrix, in its view of block column b (block_view), as
 * bridge_rect_terms takes it, on d's queue. */
static struct bridge_rect rect_of(const struct lu_multi *m, int32_t d, int64_t b, int64_t r0,
                                  int64_t c0)
{
    const struct lu_matrix view = block_view(m, d, b), *a = &view;
    return (struct bridge_rect){.queue = m->ctx[d]->queue,
                                .mem = a->mem,
                                .offset = (size_t)((a->offset + r0 * a->ld + c0) * m->es),
                                .pitch = (size_t)(a->ld * m->es)};
}

/* Each device's last upload from a bridge (readers[d], NULL: none) waited for and let go. */
static int32_t wait_readers(struct lu_multi *m, cl_event *readers)
{
    int32_t status = CLOPS_OK;
    for (int32_t d = 0; d < m->count; d++) {
        cl_event *e = &readers[d];
        if (*e == NULL)
            continue;
        const cl_int rc = pool_wait_event(*e);
        clReleaseEvent(*e);
        *e = NULL;
        if (rc != CL_SUCCESS && status == CLOPS_OK)
            status = err_cl(rc, "%s: waiting for an upload between devices failed", m->op);
    }
    return status;
}

/* A bridge for the next transfer: the one used three transfers back, once the uploads that
 * read it are done (host waits: they run on other contexts, whose events no queue here may
 * wait for). Each holds the largest transfer, a whole block column. */
static int32_t take_slot(struct lu_multi *m, struct bridge **out)
{
    const size_t bytes = (size_t)(m->rows * m->nb * m->es);
    const int32_t s = m->next_slot;
    m->next_slot = (s + 1) % LU_MULTI_SLOTS;
    int32_t status = wait_readers(m, m->slot_readers[s]);
    if (status == CLOPS_OK && m->slot[s].data == NULL)
        status = bridge_take(m->ctx[0]->pool, bytes, m->op, &m->slot[s]);
    *out = &m->slot[s];
    return status;
}

/* The slot `b` came from (take_slot), for recording its readers. */
static int32_t slot_index(const struct lu_multi *m, const struct bridge *b)
{
    return (int32_t)(b - m->slot);
}

/* Enqueues a download of a rectangle of device d's matrix, inside block column `block`, into
 * `b` from byte `at` on, on `queue` (NULL: d's queue), and flushes; *done marks it (and all
 * before it on that queue). */
static int32_t download(struct lu_multi *m, int32_t d, cl_command_queue queue, struct bridge *b,
                        size_t at, int64_t block, int64_t r0, int64_t rows, int64_t c0,
                        int64_t cols, cl_event *done)
{
    struct bridge_rect r = rect_of(m, d, block, r0, c0);
    r.queue = queue != NULL ? queue : r.queue;
    const size_t width = (size_t)(cols * m->es), host_origin[3] = {0, 0, 0};
    size_t origin[3], region[3];
    bridge_rect_terms(&r, 0, (size_t)rows, width, origin, region);
    cl_int rc = clEnqueueReadBufferRect(r.queue, r.mem, CL_FALSE, origin, host_origin, region,
                                        r.pitch, 0, width, 0, (char *)b->data + at, 0, NULL, done);
    if (rc == CL_SUCCESS)
        rc = clFlush(r.queue);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: downloading %lld x %lld elements from device '%s' failed", m->op,
                      (long long)rows, (long long)cols, pool_device_info(m->ctx[d]->dev)->name);
    pool_record_download(m->ctx[0]->pool, rows * cols * m->es);
    return CLOPS_OK;
}

/* Enqueues an upload of `b` from byte `at` on into the same rectangle of device d's matrix,
 * inside block column `block`, on `queue` (NULL: d's queue) after `*after` (when not NULL);
 * *reader marks it (the event it held let go: the same bridge's upload before, on the same
 * in-order queue). */
static int32_t upload_marked(struct lu_multi *m, int32_t d, cl_command_queue queue,
                             const cl_event *after, struct bridge *b, size_t at, int64_t block,
                             int64_t r0, int64_t rows, int64_t c0, int64_t cols, cl_event *reader)
{
    struct bridge_rect r = rect_of(m, d, block, r0, c0);
    r.queue = queue != NULL ? queue : r.queue;
    const cl_uint waits = after != NULL && *after != NULL;
    const size_t width = (size_t)(cols * m->es), host_origin[3] = {0, 0, 0};
    size_t origin[3], region[3];
    bridge_rect_terms(&r, 0, (size_t)rows, width, origin, region);
    if (*reader != NULL) { /* an earlier piece's, on the same in-order queue: done before */
        clReleaseEvent(*reader);
        *reader = NULL;
    }
    cl_int rc = clEnqueueWriteBufferRect(r.queue, r.mem, CL_FALSE, origin, host_origin, region,
                                         r.pitch, 0, width, 0, (char *)b->data + at, waits,
                                         waits ? after : NULL, reader);
    if (rc == CL_SUCCESS)
        rc = clFlush(r.queue);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: uploading %lld x %lld elements to device '%s' failed", m->op,
                      (long long)rows, (long long)cols, pool_device_info(m->ctx[d]->dev)->name);
    pool_record_upload(m->ctx[0]->pool, rows * cols * m->es);
    return CLOPS_OK;
}

/* upload_marked from one of the slots (take_slot), recorded as a reader of it. */
static int32_t upload(struct lu_multi *m, int32_t d, cl_command_queue queue, const cl_event *after,
                      struct bridge *b, size_t at, int64_t block, int64_t r0, int64_t rows,
                      int64_t c0, int64_t cols)
{
    return upload_marked(m, d, queue, after, b, at, block, r0, rows, c0, cols,
                         &m->slot_readers[slot_index(m, b)][d]);
}

/* *kept = a marker of what `queue` holds so far, submitted (the event it held let go). */
static int32_t mark(struct lu_multi *m, cl_command_queue queue, cl_event *kept)
{
    cl_event e = NULL;
    const int32_t status = lu_queue_mark(m->ctx[0], queue, &e);
    if (*kept != NULL)
        clReleaseEvent(*kept);
    *kept = status == CLOPS_OK ? e : NULL;
    if (status != CLOPS_OK && e != NULL)
        clReleaseEvent(e); /* marked, but its flush failed */
    return status;
}

/* Nothing enqueued on `to` after this starts before what `from` holds so far (two queues of
 * ctx's device: a marker there, a barrier here). */
static int32_t queue_follows(struct lu_ctx *ctx, cl_command_queue from, cl_command_queue to)
{
    cl_event e = NULL;
    int32_t status = lu_queue_mark(ctx, from, &e);
    if (status == CLOPS_OK)
        status = lu_queue_wait_for(ctx, to, &e);
    if (e != NULL)
        clReleaseEvent(e); /* marked, but its flush failed */
    return status;
}

/* Nothing enqueued on device d's queue after this starts before `e` (kept; none when NULL). */
static int32_t queue_after(struct lu_multi *m, int32_t d, cl_event e)
{
    const cl_int rc =
        e != NULL ? clEnqueueBarrierWithWaitList(m->ctx[d]->queue, 1, &e, NULL) : CL_SUCCESS;
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: ordering a device's queues failed", m->op);
    return CLOPS_OK;
}

static int32_t wait_event(struct lu_multi *m, cl_event *e)
{
    cl_int rc = pool_wait_event(*e);
    clReleaseEvent(*e);
    *e = NULL;
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: waiting for a download between devices failed", m->op);
    return CLOPS_OK;
}

/* Block column b (all rows) from device `from` into device `to`'s matrix. */
static int32_t move_block(struct lu_multi *m, int32_t from, int32_t to, int64_t b)
{
    const int64_t c0 = b * m->nb, w = block_width(m, b);
    struct bridge *slot = NULL;
    cl_event done = NULL;
    int32_t status = take_slot(m, &slot);
    if (status == CLOPS_OK)
        status = download(m, from, NULL, slot, 0, b, 0, m->rows, c0, w, &done);
    if (status == CLOPS_OK)
        status = wait_event(m, &done);
    if (status == CLOPS_OK)
        status = upload(m, to, NULL, NULL, slot, 0, b, 0, m->rows, c0, w);
    if (done != NULL)
        clReleaseEvent(done);
    return status;
}

/* ---- The factorization ----------------------------------------------------------------------- */

/* The pieces a panel of `rows` rows crosses in: about lu_panel_piece_bytes each, at most
 * LU_PANEL_PIECES_MAX, and piece p's rows into t->row (from row j on). */
static void panel_pieces(const struct lu_multi *m, int64_t j, int64_t rows, int64_t jb,
                         struct panel_transfer *t)
{
    const int64_t bytes = rows * jb * m->es,
                  per = lu_panel_piece_bytes > 0 ? lu_panel_piece_bytes : 1;
    int64_t pieces = (bytes + per - 1) / per;
    pieces = pieces < 1 ? 1 : pieces > LU_PANEL_PIECES_MAX ? LU_PANEL_PIECES_MAX : pieces;
    pieces = pieces > rows ? rows : pieces;
    t->pieces = (int32_t)pieces;
    for (int32_t p = 0; p <= t->pieces; p++)
        t->row[p] = j + rows * p / t->pieces;
}

/* The events of a panel's pieces let go. */
static void panel_release(struct panel_transfer *t)
{
    for (int32_t p = 0; p < LU_PANEL_PIECES_MAX; p++)
        if (t->done[p] != NULL) {
            clReleaseEvent(t->done[p]);
            t->done[p] = NULL;
        }
    if (t->home != NULL)
        clReleaseEvent(t->home);
    t->home = NULL;
}

/* Whether block column k goes home to the call's device while the steps go on (send_home) rather
 * than at the end (gather): a panel's block column of another device but the last panel's,
 * which is final once its panel is factored but for the later panels' interchanges, which the
 * call's device applies to every column left of them (swap_left). The last panel's may be
 * updated after its panel (a panel narrower than its block), and block columns right of every
 * panel (a wide matrix) are updated by all of them. */
static int goes_home_early(const struct lu_multi *m, int64_t k)
{
    const int64_t panels = (m->mn + m->nb - 1) / m->nb;
    return owner(m, k) != 0 && k + 1 < panels;
}

/* The panel of block column k factored on its owner, its pivots and the owner's info
 * downloaded into the host arrays, and it (rows j.., jb columns) into a slot in pieces of rows
 * (panel_pieces), each marked by t->done[p], so that broadcast_panel sends a piece on while the
 * next one downloads. */
static int32_t factor_panel(struct lu_multi *m, int64_t k, struct panel_transfer *t)
{
    const int32_t o = owner(m, k);
    struct lu_ctx *ctx = m->ctx[o];
    const int64_t j = k * m->nb, jb = m->mn - j < m->nb ? m->mn - j : m->nb;
    const struct lu_matrix view = block_view(m, o, k);
    int32_t status = lu_factor_block(ctx, &view, j, jb, m->pivoting, m->mn);
    /* The downloads on the owner's transfer queue, after the panel and nothing after it. */
    if (status == CLOPS_OK)
        status = queue_follows(ctx, ctx->queue, m->xfer[o]);
    if (status == CLOPS_OK)
        status = take_slot(m, &t->slot);
    cl_int rc = CL_SUCCESS;
    if (status == CLOPS_OK)
        rc = clEnqueueReadBuffer(m->xfer[o], ctx->ipiv_mem, CL_FALSE, (size_t)j * sizeof(int32_t),
                                 (size_t)jb * sizeof(int32_t), m->piv + j, 0, NULL, NULL);
    if (status == CLOPS_OK && rc == CL_SUCCESS)
        rc = clEnqueueReadBuffer(m->xfer[o], ctx->ipiv_mem, CL_FALSE,
                                 (size_t)m->mn * sizeof(int32_t), sizeof(int32_t), m->info + k, 0,
                                 NULL, NULL);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: downloading a panel's pivots failed", m->op);
    panel_pieces(m, j, m->rows - j, jb, t);
    for (int32_t p = 0; p < t->pieces && status == CLOPS_OK; p++)
        status = download(m, o, m->xfer[o], t->slot, (size_t)((t->row[p] - j) * jb * m->es), k,
                          t->row[p], t->row[p + 1] - t->row[p], j, jb, &t->done[p]);
    /* The rows above the panel, final since the step before, after it in the slot: the panel
     * reaches the call's device with the broadcast, and these with the next step (send_home). */
    if (status == CLOPS_OK && j > 0 && goes_home_early(m, k))
        status = download(m, o, m->xfer[o], t->slot, (size_t)((m->rows - j) * jb * m->es), k, 0, j,
                          j, jb, &t->home);
    return status;
}

/* Part h, downloaded a step ago, uploaded into the call's matrix (nothing when there is none). */
static int32_t send_home(struct lu_multi *m, struct home_part *h)
{
    if (h->done == NULL)
        return CLOPS_OK;
    int32_t status = wait_event(m, &h->done);
    if (status == CLOPS_OK)
        status = upload(m, 0, m->inq[0], NULL, h->slot, h->at, h->block, 0, h->rows,
                        h->block * m->nb, m->nb);
    return status;
}

/* Panel k sent to every other device, each piece as soon as it is downloaded (t), and its
 * pivots with the last, on the device's upload queue (m->ready then marks it there): into
 * another device than the call's once the updates of the panel two steps before, in the same
 * place, are done. */
static int32_t broadcast_panel(struct lu_multi *m, int64_t k, struct panel_transfer *t)
{
    const int64_t j = k * m->nb, jb = m->mn - j < m->nb ? m->mn - j : m->nb;
    const int32_t place = (int32_t)(k % LU_MULTI_PLACES);
    int32_t status = CLOPS_OK;
    for (int32_t p = 0; p < t->pieces && status == CLOPS_OK; p++) {
        status = wait_event(m, &t->done[p]);
        for (int32_t d = 0; d < m->count && status == CLOPS_OK; d++)
            if (d != owner(m, k))
                status = upload(m, d, m->inq[d], p == 0 ? &m->place_read[place][d] : NULL, t->slot,
                                (size_t)((t->row[p] - j) * jb * m->es), k, t->row[p],
                                t->row[p + 1] - t->row[p], j, jb);
    }
    for (int32_t d = 0; d < m->count && status == CLOPS_OK; d++) {
        if (d == owner(m, k))
            continue;
        /* m->piv stays as it is until the call's release: the write may read it any time. */
        const cl_int rc = clEnqueueWriteBuffer(
            m->inq[d], m->ctx[d]->ipiv_mem, CL_FALSE, (size_t)j * sizeof(int32_t),
            (size_t)jb * sizeof(int32_t), m->piv + j, 0, NULL, NULL);
        if (rc != CL_SUCCESS)
            status = err_cl(rc, "%s: uploading a panel's pivots failed", m->op);
        if (status == CLOPS_OK)
            status = mark(m, m->inq[d], &m->ready[place][d]);
    }
    return status;
}

/* ---- The block columns leaving the call's matrix --------------------------------------------- */

/* Whether block column b is another device's and leaves the call's matrix at step k. */
static int leaves_at(const struct lu_multi *m, int64_t b, int64_t k)
{
    return owner(m, b) != 0 && m->leave[b] == k;
}

/* When each other device's block column leaves the call's matrix (m->leave): in the order of the
 * columns, per_step of them a step, so that they have all left after LU_MULTI_LEAVE_STEPS steps (a
 * run for each other device at least; bridges of LU_MULTI_LEAVE_BYTES and a sixteenth of the host's
 * memory at most), the first before the steps begin: they cross while the call's device factors and
 * updates, and it updates those still with it meanwhile. All of them before the first step took 82
 * ms at N = 32768 f64 on two H200s, both GPUs idle; a run a step (4) left the call's device with
 * most of the early updates (733.7 ms against 727.1), 8 a step gained 2% (718.0 against 733.5), 16
 * lost 3% (758.6): hosts/bench/RESULTS.md, 2026-11-30 (23:45).
 * One that leaves at step k is downloaded once the call's device has updated it for the steps
 * before k, and its owner updates it for step k a step later, as it arrives (catch_up): its
 * crossing then waits for no update of its owner, and holds none up. So it leaves three steps
 * before its own panel at the latest (its owner updates it for that panel at the step before, ahead
 * of the others: factor_steps' look-ahead), and two before the last step; -1 where that is before
 * the first: it crosses before the steps (move_block). */
static void plan_leaving(struct lu_multi *m)
{
    const int64_t blocks = (m->cols + m->nb - 1) / m->nb, panels = (m->mn + m->nb - 1) / m->nb;
    /* Two bridges of at most LU_MULTI_LEAVE_BYTES, and of a sixteenth of the host's memory. */
    const uint64_t host = os_physical_bytes() / 16;
    const int64_t bound =
        host > 0 && host < (uint64_t)LU_MULTI_LEAVE_BYTES ? (int64_t)host : LU_MULTI_LEAVE_BYTES;
    const int64_t cap = bound / (m->rows * m->nb * m->es);
    const int64_t others = blocks - owned_blocks(m, 0, blocks);
    int64_t per = (others + LU_MULTI_LEAVE_STEPS - 1) / LU_MULTI_LEAVE_STEPS;
    per = per < m->run * (m->count - 1) ? m->run * (m->count - 1) : per;
    per = per > cap ? cap : per;
    m->per_step = per < 1 ? 1 : per;
    m->arrived = 0;
    m->most = 0;
    for (int64_t b = 0, i = 0; b < blocks; b++) {
        if (owner(m, b) == 0) {
            m->leave[b] = 0;
            continue;
        }
        int64_t step = i++ / m->per_step;
        step = step > b - 3 ? b - 3 : step;
        step = step > panels - 2 ? panels - 2 : step;
        m->leave[b] = step < 0 ? -1 : step;
    }
    /* The caps leave more than per_step at some steps: each bridge holds the most of any. */
    for (int64_t step = 0; step < panels; step++) {
        int64_t n = 0;
        for (int64_t b = 0; b < blocks; b++)
            n += leaves_at(m, b, step);
        m->most = n > m->most ? n : m->most;
    }
}

/* The block columns leaving at step k (plan_leaving) downloaded from the call's matrix into
 * bridge k % 2 on the queue `out`, after all the call's device's queue holds so far (the
 * updates of the steps before k), each marked by m->left[b] for arrive. The bridge is free once
 * the uploads from it two steps before are done (host waits: they ran on other devices'
 * contexts, long since as a rule). */
static int32_t depart(struct lu_multi *m, int64_t k)
{
    const int64_t blocks = (m->cols + m->nb - 1) / m->nb, bytes = m->rows * m->nb * m->es;
    int64_t leaving = 0;
    for (int64_t b = 0; b < blocks; b++)
        leaving += leaves_at(m, b, k);
    if (leaving == 0)
        return CLOPS_OK;
    struct bridge *slot = &m->leave_slot[k & 1];
    int32_t status = wait_readers(m, m->leave_readers[k & 1]);
    if (status == CLOPS_OK && slot->data == NULL)
        status = bridge_take(m->ctx[0]->pool, (size_t)(m->most * bytes), m->op, slot);
    if (status == CLOPS_OK)
        status = queue_follows(m->ctx[0], m->ctx[0]->queue, m->out);
    for (int64_t b = 0, at = 0; b < blocks && status == CLOPS_OK; b++)
        if (leaves_at(m, b, k)) {
            status = download(m, 0, m->out, slot, (size_t)at, b, 0, m->rows, b * m->nb,
                              block_width(m, b), &m->left[b]);
            at += bytes;
        }
    return status;
}

/* The block columns that left the call's matrix at the steps up to k not uploaded yet (depart)
 * uploaded into their owners' matrices on their upload queues, each once its download is done
 * (the host waits), and each owner's queue made to wait for them. */
static int32_t arrive(struct lu_multi *m, int64_t k)
{
    const int64_t blocks = (m->cols + m->nb - 1) / m->nb, bytes = m->rows * m->nb * m->es;
    int32_t status = CLOPS_OK;
    for (; m->arrived <= k && status == CLOPS_OK; m->arrived++) {
        const int64_t step = m->arrived;
        int got[CONFIG_MAX_DEVICES] = {0};
        for (int64_t b = 0, at = 0; b < blocks && status == CLOPS_OK; b++) {
            if (!leaves_at(m, b, step))
                continue;
            const int32_t d = owner(m, b);
            if (m->left[b] == NULL) /* its download was never enqueued */
                return err_set(CLOPS_ERR_DEVICE, "%s: a block column did not leave", m->op);
            const int64_t t0 = os_monotonic_ns();
            status = wait_event(m, &m->left[b]);
            m->arrive_wait_ns += os_monotonic_ns() - t0;
            if (status == CLOPS_OK)
                status = upload_marked(m, d, m->inq[d], NULL, &m->leave_slot[step & 1], (size_t)at,
                                       b, 0, m->rows, b * m->nb, block_width(m, b),
                                       &m->leave_readers[step & 1][d]);
            at += bytes;
            got[d] = 1;
            atomic_fetch_add(&lu_multi_left_in_steps, step > 0);
        }
        for (int32_t d = 1; d < m->count && status == CLOPS_OK; d++)
            if (got[d])
                status = queue_follows(m->ctx[d], m->inq[d], m->ctx[d]->queue);
    }
    return status;
}

/* Whether device d updates block column b at step k: where d holds it (holder), but on
 * another device than the call's, one that left the call's matrix at step k is updated for it
 * only as it arrives, a step later (catch_up: `late`), and only then. */
static int updates(const struct lu_multi *m, int32_t d, int64_t b, int64_t k, int late)
{
    if (holder(m, b, k) != d)
        return 0;
    return d == 0 || late == (m->leave[b] == k);
}

/* The last of the block columns d holds at step k from b on (b held, before b1) that lie side
 * by side with b in d's matrix, and how many they are: on another device than the call's,
 * every one it holds (it keeps those it owns side by side, block_view, and they arrive in
 * order: one it owns but does not hold yet ends them); on the call's, those next to b. */
static int64_t side_by_side(const struct lu_multi *m, int32_t d, int64_t k, int late, int64_t b,
                            int64_t b1, int64_t *count)
{
    int64_t last = b;
    *count = 1;
    for (int64_t next = b + 1; next < b1; next++) {
        if (!updates(m, d, next, k, late)) {
            if (d == 0 || owner(m, next) == d)
                break;
            continue;
        }
        last = next;
        ++*count;
    }
    return last;
}

/* On device d, the update right of panel (j, jb) of block columns [b0, b1) it holds (step
 * `from` columns into block b0 when the panel ends inside it): the panel's interchanges, U12
 * with L11's inverse (inverted once for them all) and A22 -= L21 U12, once for each range of
 * them that lies side by side in d's matrix (side_by_side), addressed through the view of the
 * range's first (block_view): on a device other than the call's, its whole share at once, as
 * one device updates its whole trailing matrix (one GEMM a block column took a launch of each
 * kernel per block column and step). Each element meets the same kernels as a block column's
 * update would give it. */
static int32_t update_late(struct lu_multi *m, int32_t d, int64_t j, int64_t jb, int64_t b0,
                           int64_t b1, int64_t from, int late)
{
    struct lu_ctx *ctx = m->ctx[d];
    const int64_t k = j / m->nb;
    const struct lu_matrix panel = block_view(m, d, k); /* L11 and L21 */
    int32_t status = CLOPS_OK;
    int inverted = 0;
    for (int64_t b = b0; b < b1 && status == CLOPS_OK; b++) {
        if (!updates(m, d, b, k, late))
            continue;
        const int64_t first = b;
        int64_t blocks = 0;
        b = side_by_side(m, d, k, late, first, b1, &blocks); /* the range's last */
        const int64_t c0 = first * m->nb > from ? first * m->nb : from;
        const int64_t c1 = first * m->nb + (blocks - 1) * m->nb + block_width(m, b);
        if (c1 <= c0)
            continue;
        const struct lu_matrix a = block_view(m, d, first), range = lu_column_range(&a, c0, c1);
        if (m->pivoting == LU_PIVOTING_PARTIAL)
            status = lu_laswp(ctx, &ctx->main, &range, 0, 0, j, j + jb, 0);
        if (status == CLOPS_OK && !inverted)
            status = lu_invert_diagonal_blocks(ctx, &ctx->main, &panel, j, jb, 1, 0, 0, 1, 1);
        inverted = 1;
        if (status == CLOPS_OK)
            status = lu_apply_inverse(ctx, &ctx->main, jb, 0, &a, j, c0, c1 - c0);
        if (status != CLOPS_OK || a.rows == j + jb)
            continue;
        const struct gemm_operand l21 = lu_operand(&panel, j + jb, j), u12 = lu_operand(&a, j, c0);
        const struct gemm_operand a22 = lu_operand(&a, j + jb, c0);
        status = gemm_enqueue(&ctx->gemm, ctx->queue, ctx->dtype, a.rows - j - jb, c1 - c0, jb,
                              -1.0, &l21, &u12, 1.0, &a22, ctx->op);
    }
    const cl_int rc = status == CLOPS_OK ? clFlush(ctx->queue) : CL_SUCCESS;
    if (rc != CL_SUCCESS)
        status = err_cl(rc, "%s: submitting an update failed", m->op);
    return status;
}

static int32_t update_blocks(struct lu_multi *m, int32_t d, int64_t j, int64_t jb, int64_t b0,
                             int64_t b1, int64_t from)
{
    return update_late(m, d, j, jb, b0, b1, from, 0);
}

/* On device d (not the call's), the block columns of its own that left the call's matrix at
 * step k (plan_leaving), uploaded (arrive) and updated for that step: at step k + 1, before
 * its other updates of it. Panel k is still in its place there (the panel two steps on comes
 * into it after this step's updates: its reader's marker is set again after these). */
static int32_t catch_up(struct lu_multi *m, int32_t d, int64_t k)
{
    const int64_t blocks = (m->cols + m->nb - 1) / m->nb, j = k * m->nb;
    const int64_t jb = m->mn - j < m->nb ? m->mn - j : m->nb;
    int any = 0;
    for (int64_t b = 0; b < blocks && !any; b++)
        any = owner(m, b) == d && leaves_at(m, b, k);
    if (!any)
        return CLOPS_OK;
    int32_t status = arrive(m, k);
    if (status == CLOPS_OK)
        status = update_late(m, d, j, jb, k + 2, blocks, 0, 1);
    if (status == CLOPS_OK && owner(m, k) != d)
        status = mark(m, m->ctx[d]->queue, &m->place_read[k % LU_MULTI_PLACES][d]);
    return status;
}

/* lu_multi_hold: device 1's queue made to wait for the host (a user event) before step k's
 * updates there. */
static int32_t hold_device(struct lu_multi *m, int64_t k)
{
    if (k != lu_multi_hold || m->count < 2 || m->hold != NULL)
        return CLOPS_OK;
    cl_context context = NULL;
    cl_int rc =
        clGetCommandQueueInfo(m->ctx[1]->queue, CL_QUEUE_CONTEXT, sizeof context, &context, NULL);
    if (rc == CL_SUCCESS)
        m->hold = clCreateUserEvent(context, &rc);
    if (rc != CL_SUCCESS)
        return err_cl(rc, "%s: holding a device failed", m->op);
    return queue_after(m, 1, m->hold);
}

/* Device 1 let go (20 ms after the call to let what did not wait for it run first). */
static void release_hold(struct lu_multi *m)
{
    if (m->hold == NULL)
        return;
    os_sleep_ns(20 * 1000 * 1000);
    clSetUserEventStatus(m->hold, CL_COMPLETE);
    clReleaseEvent(m->hold);
    m->hold = NULL;
}

/* The steps, panel after panel, with a look-ahead of one: after panel k reached every device,
 * the next block column is updated and factored on its owner before the devices update the
 * rest (its download then waits behind nothing but that). Where the owner of panel k owns the
 * next block column too (run_for), that one is updated and factored before panel k is sent:
 * the host's waits for panel k's pieces then hold nothing of its owner up. */
static int32_t factor_steps(struct lu_multi *m)
{
    const int64_t panels = (m->mn + m->nb - 1) / m->nb, blocks = (m->cols + m->nb - 1) / m->nb;
    struct panel_transfer t[2] = {{0}, {0}}; /* panel k's, and the next one's */
    struct home_part home = {0};
    /* When each panel had reached the host (debug line below), in ms from the steps' start. */
    char sent[LU_MULTI_SENT_TEXT];
    size_t used = 0;
    sent[0] = 0;
    m->steps_ns = os_monotonic_ns();
    int32_t status = factor_panel(m, 0, &t[0]);
    for (int64_t k = 0; k < panels && status == CLOPS_OK; k++) {
        const int64_t j = k * m->nb, jb = m->mn - j < m->nb ? m->mn - j : m->nb;
        struct panel_transfer *now = &t[k & 1], *next = &t[(k + 1) & 1];
        const int ahead = k + 1 < blocks && owner(m, k + 1) == owner(m, k);
        if (k > 0)
            status = pace_unit_queued(&m->ctx[0]->pace); /* the panel before is queued */
        if (status == CLOPS_OK && ahead)
            status = update_blocks(m, owner(m, k + 1), j, jb, k + 1, k + 2, 0);
        if (status == CLOPS_OK && ahead && k + 1 < panels)
            status = factor_panel(m, k + 1, next);
        if (status == CLOPS_OK)
            status = broadcast_panel(m, k, now);
        if (used + 16 < sizeof sent)
            used += (size_t)snprintf(sent + used, sizeof sent - used, " %.0f",
                                     (double)(os_monotonic_ns() - m->steps_ns) / 1e6);
        if (k == lu_multi_hold + 2)
            release_hold(m); /* panel k went into the place the held updates read */
        /* The rows above the last panel go home now, those above this one next step: waiting
         * for them now would hold the next panel up. */
        if (status == CLOPS_OK)
            status = send_home(m, &home);
        if (status == CLOPS_OK && now->home != NULL) {
            home = (struct home_part){.slot = now->slot,
                                      .at = (size_t)((m->rows - j) * jb * m->es),
                                      .block = k,
                                      .rows = j,
                                      .done = now->home};
            now->home = NULL;
        }
        if (status == CLOPS_OK && !ahead && k + 1 < blocks)
            status =
                queue_after(m, owner(m, k + 1), m->ready[k % LU_MULTI_PLACES][owner(m, k + 1)]);
        if (status == CLOPS_OK && !ahead && k + 1 < blocks)
            status = update_blocks(m, owner(m, k + 1), j, jb, k + 1, k + 2, 0);
        if (status == CLOPS_OK && !ahead && k + 1 < panels)
            status = factor_panel(m, k + 1, next);
        /* Block k's own columns right of the panel (a last panel narrower than its block),
         * then the block columns after the next one, updated already. */
        if (status == CLOPS_OK)
            status = update_blocks(m, owner(m, k), j, jb, k, k + 1, j + jb);
        for (int32_t d = 0; d < m->count && status == CLOPS_OK; d++) {
            /* Panel k arrived (its owner factored it on this queue), and after these updates,
             * its place on another device than the call's may take the panel two steps on. */
            const int received = d != owner(m, k);
            if (received && !(k + 1 < blocks && d == owner(m, k + 1) && !ahead))
                status = queue_after(m, d, m->ready[k % LU_MULTI_PLACES][d]);
            if (status == CLOPS_OK && d == 1)
                status = hold_device(m, k);
            if (status == CLOPS_OK && d > 0 && k > 0)
                status = catch_up(m, d, k - 1);
            if (status == CLOPS_OK)
                status = update_blocks(m, d, j, jb, k + 2, blocks, 0);
            if (status == CLOPS_OK && received && d > 0)
                status = mark(m, m->ctx[d]->queue, &m->place_read[k % LU_MULTI_PLACES][d]);
        }
        /* The block columns that leave at the next step, once the call's device has updated
         * them for this one. */
        if (status == CLOPS_OK && k + 1 < panels)
            status = depart(m, k + 1);
    }
    if (status == CLOPS_OK)
        status = send_home(m, &home);
    log_msg(CLOPS_LOG_DEBUG,
            "%s: the steps began %.1f ms into the call and were enqueued in %.1f ms, %.1f ms of "
            "them waiting for block columns leaving; each panel on the host at (ms):%s",
            m->op, (double)(m->steps_ns - m->start_ns) / 1e6,
            (double)(os_monotonic_ns() - m->steps_ns) / 1e6, (double)m->arrive_wait_ns / 1e6, sent);
    if (home.done != NULL)
        clReleaseEvent(home.done);
    panel_release(&t[0]);
    panel_release(&t[1]);
    return status;
}

/* The panels' interchanges on the columns left of each, in order, on the call's device, over
 * the whole of them: its own block columns and those that came home while the steps went on
 * (goes_home_early), which is every block column left of the last panel. */
static int32_t swap_left(struct lu_multi *m)
{
    int32_t status = CLOPS_OK;
    for (int64_t j = m->nb; j < m->mn && status == CLOPS_OK; j += m->nb) {
        const int64_t jb = m->mn - j < m->nb ? m->mn - j : m->nb;
        const struct lu_matrix left = lu_column_range(&m->m[0], 0, j);
        status = lu_laswp(m->ctx[0], &m->ctx[0]->main, &left, 0, 0, j, j + jb, 0);
    }
    return status;
}

/* The other devices' block columns that did not go home during the steps (goes_home_early)
 * into the call's matrix, and the pivots and the first info (in panel order) into the call's
 * device's ipiv_mem. */
static int32_t gather(struct lu_multi *m)
{
    const int64_t blocks = (m->cols + m->nb - 1) / m->nb;
    int32_t status = CLOPS_OK;
    for (int64_t b = 0; b < blocks && status == CLOPS_OK; b++)
        if (owner(m, b) != 0 && !goes_home_early(m, b))
            status = move_block(m, owner(m, b), 0, b);
    /* Each device's statistics: its block columns, and the time until its last one left. */
    for (int32_t d = 0; d < m->count && status == CLOPS_OK; d++)
        pool_record_device_work(m->ctx[d]->dev, owned_blocks(m, d, blocks),
                                os_monotonic_ns() - m->start_ns);
    const int64_t panels = (m->mn + m->nb - 1) / m->nb;
    m->piv[m->mn] = 0;
    for (int64_t k = 0; k < panels && m->piv[m->mn] == 0; k++)
        m->piv[m->mn] = m->info[k];
    cl_int rc =
        status == CLOPS_OK
            ? clEnqueueWriteBuffer(m->ctx[0]->queue, m->ctx[0]->ipiv_mem, CL_FALSE, 0,
                                   (size_t)(m->mn + 1) * sizeof(int32_t), m->piv, 0, NULL, NULL)
            : CL_SUCCESS;
    if (rc != CL_SUCCESS)
        status = err_cl(rc, "%s: uploading the pivots failed", m->op);
    return status;
}

/* A context and a working matrix on each other device (a panel's place and the block columns
 * it owns: block_view), their pivots cleared, and the blocks each owns copied from the call's
 * matrix. */
static int32_t open_devices(struct lu_multi *m, struct op_call *call, struct pool_device **devs)
{
    int32_t status = CLOPS_OK;
    for (int32_t d = 0; d < m->count && status == CLOPS_OK; d++) {
        status = pool_open_queue(call->pool, devs[d], m->op, &m->xfer[d]);
        if (status == CLOPS_OK)
            status = pool_open_queue(call->pool, devs[d], m->op, &m->inq[d]);
    }
    for (int32_t d = 1; d < m->count && status == CLOPS_OK; d++) {
        status = pool_open_queue(call->pool, devs[d], m->op, &m->queue[d]);
        if (status != CLOPS_OK)
            break;
        struct lu_ctx *ctx = &m->own[d];
        ctx->call = NULL;
        ctx->nb_forced = m->nb;
        m->ctx[d] = ctx;
        status =
            lu_ctx_init(ctx, call->pool, devs[d], m->queue[d], call->impl, m->ctx[0]->dtype, m->mn);
        m->m[d].ld = (owned_blocks(m, d, (m->cols + m->nb - 1) / m->nb) + LU_MULTI_PLACES) * m->nb;
        m->m[d].rows = m->rows;
        m->m[d].cols = m->m[d].ld;
        if (status == CLOPS_OK)
            status = pool_alloc_device_memory(devs[d], m->rows * m->m[d].ld * m->es, m->op,
                                              "a device's block columns", &m->m[d].mem);
        if (status == CLOPS_OK)
            status = lu_clear_info(ctx, m->mn);
    }
    /* The block columns that must cross before the steps (plan_leaving); the others leave
     * during them, the first at once, on a queue of their own. */
    const int64_t blocks = (m->cols + m->nb - 1) / m->nb;
    for (int64_t b = 0; b < blocks && status == CLOPS_OK; b++)
        if (owner(m, b) != 0 && m->leave[b] < 0)
            status = move_block(m, 0, owner(m, b), b);
    if (status == CLOPS_OK)
        status = pool_open_queue(call->pool, devs[0], m->op, &m->out);
    if (status == CLOPS_OK)
        status = depart(m, 0);
    /* The upload queues start after what each device's queue holds: the cleared pivots (and on
     * the call's device, its staging of the matrix, read where block columns come home). */
    for (int32_t d = 0; d < m->count && status == CLOPS_OK; d++)
        status = queue_follows(m->ctx[d], m->ctx[d]->queue, m->inq[d]);
    return status;
}

/* Each device's upload queue joined to its queue, for what follows there (swap_left, gather). */
static int32_t join_uploads(struct lu_multi *m)
{
    int32_t status = CLOPS_OK;
    for (int32_t d = 0; d < m->count && status == CLOPS_OK; d++)
        status = queue_follows(m->ctx[d], m->inq[d], m->ctx[d]->queue);
    return status;
}

/* Each device's transfer and upload queues joined to its queue, on every path (a marker there,
 * a barrier here), and let go: the waits that end each device's work, the call's on its queue
 * and finish_devices' on the others, then cover what a failure left on them. A queue that could
 * not be joined stays for finish_devices to wait for. Plain OpenCL calls: a failure here must
 * not replace the message of the one being returned. */
static void join_transfers(struct lu_multi *m)
{
    for (int32_t d = 0; d < m->count; d++) {
        if (m->ctx[d] == NULL || m->ctx[d]->queue == NULL)
            continue;
        cl_command_queue *queues[3] = {&m->xfer[d], &m->inq[d], d == 0 ? &m->out : NULL};
        for (int32_t q = 0; q < 3; q++) {
            if (queues[q] == NULL || *queues[q] == NULL)
                continue;
            cl_event done = NULL;
            cl_int rc = clEnqueueMarkerWithWaitList(*queues[q], 0, NULL, &done);
            if (rc == CL_SUCCESS)
                rc = clFlush(*queues[q]);
            if (rc == CL_SUCCESS)
                rc = clEnqueueBarrierWithWaitList(m->ctx[d]->queue, 1, &done, NULL);
            if (done != NULL)
                clReleaseEvent(done);
            if (rc == CL_SUCCESS) {
                clReleaseCommandQueue(*queues[q]);
                *queues[q] = NULL;
            }
        }
    }
}

/* The other devices' work done (on any path: what they still run may read what is freed), and
 * their device time counted from their chains' start markers. */
static void finish_devices(struct lu_multi *m)
{
    /* Transfer and upload queues join_transfers could not join (or that a failure before it
     * left). */
    for (int32_t d = 0; d < m->count; d++) {
        if (m->xfer[d] != NULL)
            clFinish(m->xfer[d]);
        if (m->inq[d] != NULL)
            clFinish(m->inq[d]);
    }
    if (m->out != NULL)
        clFinish(m->out);
    for (int32_t d = 1; d < m->count; d++) {
        struct lu_ctx *ctx = m->ctx[d];
        if (ctx == NULL || m->queue[d] == NULL)
            continue;
        cl_event end = NULL;
        if (ctx->chain_start != NULL &&
            clEnqueueMarkerWithWaitList(m->queue[d], 0, NULL, &end) != CL_SUCCESS)
            end = NULL;
        /* A wait that failed may have returned before the work ended (pool_work_finish waits
         * again too): nothing the queue still runs may outlive the memory freed next. */
        cl_int rc = clFinish(m->queue[d]);
        if (rc != CL_SUCCESS)
            rc = clFinish(m->queue[d]);
        cl_ulong t0 = 0, t1 = 0;
        if (rc == CL_SUCCESS && end != NULL &&
            clGetEventProfilingInfo(ctx->chain_start, CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                                    NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(end, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) ==
                CL_SUCCESS &&
            t1 > t0)
            m->ctx[0]->device_ns += (int64_t)(t1 - t0);
        if (end != NULL)
            clReleaseEvent(end);
        ctx->finished = 1; /* lu_ctx_release waits for nothing more */
    }
}

int32_t lu_multi_factor(struct op_call *call, struct lu_call *l, int32_t pivoting, int *taken)
{
    *taken = 0;
    const struct lu_matrix *a = &l->a.m;
    struct pool_device *devs[CONFIG_MAX_DEVICES];
    const int32_t count = devices_for(call, &l->ctx, a->rows, a->cols, devs);
    if (count < 2)
        return CLOPS_OK;
    const int64_t mn = a->rows < a->cols ? a->rows : a->cols;
    struct lu_multi *m = malloc(sizeof *m);
    int32_t *piv = malloc((size_t)(mn + 1) * sizeof *piv);
    int32_t *info = calloc((size_t)((mn + l->ctx.nb - 1) / l->ctx.nb), sizeof *info);
    const int64_t blocks = (a->cols + l->ctx.nb - 1) / l->ctx.nb;
    int64_t *leave = calloc((size_t)blocks, sizeof *leave);
    cl_event *left = calloc((size_t)blocks, sizeof *left);
    struct dealt *dealt = calloc((size_t)blocks, sizeof *dealt);
    if (m == NULL || piv == NULL || info == NULL || leave == NULL || left == NULL ||
        dealt == NULL) {
        free(m);
        free(piv);
        free(info);
        free(leave);
        free(left);
        free(dealt);
        return err_set(CLOPS_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                       call->impl->desc->name);
    }
    *taken = 1;
    l->multi = m;
    *m = (struct lu_multi){.count = count,
                           .piv = piv,
                           .info = info,
                           .rows = a->rows,
                           .cols = a->cols,
                           .mn = mn,
                           .nb = l->ctx.nb,
                           .es = l->ctx.elem_size,
                           .pivoting = pivoting,
                           .op = call->impl->desc->name,
                           .start_ns = os_monotonic_ns(),
                           .leave = leave,
                           .left = left,
                           .dealt = dealt};
    m->ctx[0] = &l->ctx;
    m->m[0] = *a;
    m->run = run_for(blocks, count);
    const int64_t short_until = short_for(blocks);
    deal(m, blocks, short_until);
    plan_leaving(m);
    atomic_store(&lu_multi_left_in_steps, 0);
    log_msg(CLOPS_LOG_DEBUG,
            "%s: %lld x %lld across %d devices, block columns of %lld dealt one at a time to "
            "block column %lld, then %lld at a time, %lld leaving the call's device at a step",
            m->op, (long long)m->rows, (long long)m->cols, (int)count, (long long)m->nb,
            (long long)short_until, (long long)m->run, (long long)m->per_step);
    if (l->ctx.call != NULL) /* the call's units: the panels */
        pace_begin(&l->ctx.pace, l->ctx.call, l->ctx.queue, (mn + m->nb - 1) / m->nb, "panels");
    int32_t status = lu_clear_info(&l->ctx, mn);
    if (status == CLOPS_OK)
        status = open_devices(m, call, devs);
    if (status == CLOPS_OK)
        status = factor_steps(m);
    release_hold(m); /* on every path: nothing may wait on it any more */
    if (status == CLOPS_OK)
        status = join_uploads(m);
    if (status == CLOPS_OK && pivoting == LU_PIVOTING_PARTIAL)
        status = swap_left(m);
    if (status == CLOPS_OK)
        status = gather(m);
    join_transfers(m);
    return status;
}

void lu_multi_release(struct lu_multi *m)
{
    if (m == NULL)
        return;
    finish_devices(m);
    const int64_t blocks = (m->cols + m->nb - 1) / m->nb;
    for (int64_t b = 0; b < blocks; b++)
        if (m->left[b] != NULL)
            clReleaseEvent(m->left[b]);
    for (int32_t s = 0; s < 2; s++)
        for (int32_t d = 0; d < CONFIG_MAX_DEVICES; d++)
            if (m->leave_readers[s][d] != NULL)
                clReleaseEvent(m->leave_readers[s][d]);
    if (m->out != NULL)
        clReleaseCommandQueue(m->out);
    for (int32_t s = 0; s < LU_MULTI_SLOTS; s++)
        for (int32_t d = 0; d < CONFIG_MAX_DEVICES; d++)
            if (m->slot_readers[s][d] != NULL)
                clReleaseEvent(m->slot_readers[s][d]);
    for (int32_t d = 1; d < m->count; d++) {
        if (m->ctx[d] != NULL) {
            pool_free_device_memory(m->ctx[d]->dev, m->m[d].mem);
            lu_ctx_release(m->ctx[d]);
        }
        if (m->queue[d] != NULL)
            clReleaseCommandQueue(m->queue[d]);
    }
    for (int32_t d = 0; d < m->count; d++) {
        if (m->xfer[d] != NULL)
            clReleaseCommandQueue(m->xfer[d]);
        if (m->inq[d] != NULL)
            clReleaseCommandQueue(m->inq[d]);
        for (int32_t p = 0; p < LU_MULTI_PLACES; p++) {
            if (m->ready[p][d] != NULL)
                clReleaseEvent(m->ready[p][d]);
            if (m->place_read[p][d] != NULL)
                clReleaseEvent(m->place_read[p][d]);
        }
    }
    /* The call's device waited for (its release follows the call's wait): the slots are free. */
    for (int32_t s = 0; s < LU_MULTI_SLOTS && m->ctx[0] != NULL; s++)
        bridge_give(m->ctx[0]->pool, &m->slot[s]);
    for (int32_t s = 0; s < 2 && m->ctx[0] != NULL; s++)
        bridge_give(m->ctx[0]->pool, &m->leave_slot[s]);
    free(m->piv);
    free(m->info);
    free(m->leave);
    free(m->left);
    free(m->dealt);
    free(m);
}
