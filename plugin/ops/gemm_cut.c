/* gemm_cut.c — a GEMM cut into parts for a call split across devices (op_impl's cut,
 * call_split.c): C = alpha op(A) op(B) + beta C by blocks of C's longer side, columns (each part
 * reads all of op(A) and its columns of op(B)) or rows (all of op(B), its rows of op(A)): the
 * operand every part reads is the smaller one. A part whose operands move from another device
 * is cut again into a grid of pieces (op_impl's pieces): bands of the shared operand, each cut
 * into blocks of the part's own one, every band and block moved once and read by the pieces
 * that need it; the next ones move while the pieces before compute. Block edges fall on multiples
 * of GEMM_CUT_ALIGN, a multiple of every tile the kernel uses, so that each block's tiles are the
 * whole call's and, where the block is computed by the same kernel, its C is the same, bit for bit.
 */
#include "gemm_impl.h"

#include <string.h>

enum { GEMM_CUT_ALIGN = 128 };

/* The rows (`rows` = 1) or columns [at, at + extent) of a matrix view. */
static void cut_view(struct clops_tensor *t, int rows, int64_t at, int64_t extent)
{
    const int axis = rows ? 0 : 1;
    t->offset += at * t->strides[axis];
    t->shape[axis] = extent;
}

/* How the call cuts across devices: by C's columns where it has at least as many as rows. */
struct gemm_sides {
    int by_columns;
    int64_t m, n, k;
};

static struct gemm_sides sides_of(const union op_value *v)
{
    const struct clops_tensor *a = v[P_A].tensor, *c = v[P_C].tensor;
    const int64_t m = c->shape[0], n = c->shape[1];
    return (struct gemm_sides){.by_columns = n >= m,
                               .m = m,
                               .n = n,
                               .k = v[P_TRANS_A].i32 != CLOPS_NO_TRANS ? a->shape[0] : a->shape[1]};
}

/* `out` made the block [at, stop) of `from` (the whole call or a part) across C's columns
 * (`columns` 1: op(B)'s columns with them) or rows (op(A)'s rows), with its flops; C is not
 * read where beta is 0. */
static void block_of(const union op_value *from, int columns, int64_t at, int64_t stop,
                     struct op_part *out)
{
    memcpy(out->values, from, sizeof out->values);
    for (int32_t i = P_A; i <= P_C; i++) {
        out->tensors[i] = *from[i].tensor;
        out->values[i].tensor = &out->tensors[i];
    }
    if (columns) {
        cut_view(&out->tensors[P_C], 0, at, stop - at);
        cut_view(&out->tensors[P_B], from[P_TRANS_B].i32 != CLOPS_NO_TRANS, at, stop - at);
    } else {
        cut_view(&out->tensors[P_C], 1, at, stop - at);
        cut_view(&out->tensors[P_A], from[P_TRANS_A].i32 == CLOPS_NO_TRANS, at, stop - at);
    }
    const struct gemm_sides s = sides_of(out->values);
    out->flops = 2.0 * (double)s.m * (double)s.n * (double)s.k;
    out->unread = out->values[P_BETA].f64 == 0.0 ? 1u << P_C : 0;
}

/* `side` cut in GEMM_CUT_ALIGN units by `shares` (summing to 1) into `count` blocks, made into
 * parts[] from `from` along `columns`; returns the blocks with work (a share too small for one
 * unit makes a part with no flops). */
static int32_t cut_side(const union op_value *from, int columns, int64_t side, int32_t count,
                        const double *shares, struct op_part *parts)
{
    const int64_t units = (side + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN;
    if (units < 2)
        return 0;
    double cumulative = 0;
    int64_t begin = 0;
    int32_t made = 0;
    for (int32_t p = 0; p < count; p++) {
        cumulative += shares[p];
        int64_t end = p == count - 1 ? units : (int64_t)(cumulative * (double)units + 0.5);
        end = end < begin ? begin : end > units ? units : end;
        const int64_t at = begin * GEMM_CUT_ALIGN;
        const int64_t stop = end * GEMM_CUT_ALIGN < side ? end * GEMM_CUT_ALIGN : side;
        begin = end;
        if (stop <= at) { /* no part on that device */
            memcpy(parts[p].values, from, sizeof parts[p].values);
            parts[p].flops = 0;
            continue;
        }
        block_of(from, columns, at, stop, &parts[p]); /* its values, tensors and flops */
        made++;
    }
    return made;
}

int32_t gemm_cut(const struct op_call *call, int32_t count, const double *shares,
                 struct op_part *parts)
{
    if (count < 2)
        return 0;
    const struct gemm_sides s = sides_of(call->values);
    return cut_side(call->values, s.by_columns, s.by_columns ? s.n : s.m, count, shares, parts);
}

/* Edge k of `count` even blocks of `side`, in GEMM_CUT_ALIGN units (count <= the units). */
static int64_t even_edge(int64_t side, int64_t count, int64_t k)
{
    const int64_t units = (side + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN;
    const int64_t at = units * k / count * GEMM_CUT_ALIGN;
    return at < side ? at : side;
}

int32_t gemm_pieces(const struct op_call *call, const struct op_part *part, int32_t moves,
                    int32_t room, int grid, struct op_part *pieces)
{
    const struct gemm_sides whole = sides_of(call->values), s = sides_of(part->values);
    /* The part's side along the call's cut (its block of the operand it reads alone: op(B)'s
     * columns, or op(A)'s rows) and the other one (the operand every part reads). */
    const int64_t own = whole.by_columns ? s.n : s.m, shared = whole.by_columns ? s.m : s.n;
    const int64_t own_units = (own + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN;
    const int64_t shared_units = (shared + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN;
    if (moves < 2 || room < 2)
        return 0;
    /* A grid: `bands` across the shared side, each cut into `blocks` across its own, so that the
     * `bands + blocks` blocks that move are about as large (each as long as K) and the first
     * piece waits for one of each (a band across the whole part waited for all of the part's
     * own block: 14.4 ms of a 16384^2 f32 split on two H200s, 26.8 in f64). At most `room`
     * pieces, in the order bands by bands; without `grid`, `moves` bands. */
    int64_t blocks =
        grid ? (int64_t)((double)moves * (double)own / (double)(own + shared) + 0.5) : 1;
    blocks = blocks < 1 ? 1 : blocks > own_units ? own_units : blocks;
    int64_t bands = grid ? moves - blocks : moves;
    bands = bands < 1 ? 1 : bands > shared_units ? shared_units : bands;
    while (bands * blocks > room) {
        if (bands >= blocks)
            bands--;
        else
            blocks--;
    }
    if (bands * blocks < 2)
        return 0;
    int32_t made = 0;
    for (int64_t r = 0; r < bands; r++) {
        struct op_part band;
        block_of(part->values, !whole.by_columns, even_edge(shared, bands, r),
                 even_edge(shared, bands, r + 1), &band);
        for (int64_t c = 0; c < blocks; c++)
            block_of(band.values, whole.by_columns, even_edge(own, blocks, c),
                     even_edge(own, blocks, c + 1), &pieces[made++]);
    }
    return made;
}
