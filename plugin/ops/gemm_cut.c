/* gemm_cut.c — a GEMM cut into parts for a call split across devices (op_impl's cut,
 * call_split.c): C = alpha op(A) op(B) + beta C by blocks of C's longer side, columns (each part
 * reads all of op(A) and its columns of op(B)) or rows (all of op(B), its rows of op(A)): the
 * operand every part reads is the smaller one. A part whose operands move from another device
 * is cut again into a grid of pieces (op_impl's pieces): bands of the shared operand, each cut
 * into blocks of the part's own one, every band and block moved once and read by the pieces
 * that need it; the next ones move while the pieces before compute. Where the part's C moves too,
 * each piece can be cut further into slabs of K (operators.gemm.split_slabs, clops-pool(5)),
 * computed in turn on the part's device into partial sums that the kernel
 * carries from slab to slab (gemm_plan.carry), so that a piece starts once its first slab of the
 * band and of the block has moved. Block edges, and slab edges along K, fall on multiples of
 * GEMM_CUT_ALIGN, a multiple of every tile the kernel uses, so that each block's tiles are the
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
    out->carry = 0;
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
            parts[p].carry = 0;
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

/* `from` copied into `to`, its tensors `to`'s own. */
static void copy_piece(const struct op_part *from, struct op_part *to)
{
    *to = *from;
    for (int32_t i = P_A; i <= P_C; i++)
        to->values[i].tensor = &to->tensors[i];
}

/* The slabs of K a part's pieces can be cut into: none for alpha 0 (K is not read) and for f32
 * in tf32, whose packed kernel (gemm_tf32.c) does not carry sums; at most one a GEMM_CUT_ALIGN
 * of K (a multiple of every kernel's TILE_K, so that each slab is whole steps of the product's). */
static int64_t slabs_for(const union op_value *v, int64_t k, int32_t slabs)
{
    const int tf32 = v[P_A].tensor->dtype == CLOPS_F32 && v[P_PRECISION].i32 == GEMM_TF32;
    const int64_t units = (k + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN;
    if (slabs < 2 || v[P_ALPHA].f64 == 0.0 || tf32 || units < 2)
        return 1;
    return slabs < units ? slabs : units;
}

/* Piece `piece` made slab [k0, k1) of K of itself (op(A)'s columns, op(B)'s rows), carrying its
 * sums in from the slab before and out to the one after where there is one; C is read (beta)
 * and written by the last slab only. */
static void slab_of(struct op_part *piece, int64_t k0, int64_t k1, int first, int last)
{
    union op_value *v = piece->values;
    cut_view(&piece->tensors[P_A], v[P_TRANS_A].i32 != CLOPS_NO_TRANS, k0, k1 - k0);
    cut_view(&piece->tensors[P_B], v[P_TRANS_B].i32 == CLOPS_NO_TRANS, k0, k1 - k0);
    const struct gemm_sides s = sides_of(v);
    piece->flops = 2.0 * (double)s.m * (double)s.n * (double)s.k;
    piece->carry = (first ? 0 : OP_CARRY_IN) | (last ? 0 : OP_CARRY_OUT);
    if (!last)
        piece->unread |= 1u << P_C;
}

int32_t gemm_pieces(const struct op_call *call, const struct op_part *part, int32_t moves,
                    int32_t room, int grid, int32_t slabs_wanted, struct op_part *pieces)
{
    const struct gemm_sides whole = sides_of(call->values), s = sides_of(part->values);
    /* The part's side along the call's cut (its block of the operand it reads alone: op(B)'s
     * columns, or op(A)'s rows) and the other one (the operand every part reads). */
    const int64_t own = whole.by_columns ? s.n : s.m, shared = whole.by_columns ? s.m : s.n;
    const int64_t own_units = (own + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN;
    const int64_t shared_units = (shared + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN;
    const int64_t slabs = grid ? slabs_for(part->values, s.k, slabs_wanted) : 1;
    room = (int32_t)(room / slabs);
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
    /* Bands by bands; with slabs, each piece's slabs one after another (the part's device
     * computes them in turn, the first as soon as its slab of the band and of the block have
     * moved, not the whole of K). */
    int32_t made = 0;
    for (int64_t r = 0; r < bands; r++) {
        struct op_part band;
        block_of(part->values, !whole.by_columns, even_edge(shared, bands, r),
                 even_edge(shared, bands, r + 1), &band);
        for (int64_t c = 0; c < blocks; c++) {
            struct op_part piece;
            block_of(band.values, whole.by_columns, even_edge(own, blocks, c),
                     even_edge(own, blocks, c + 1), &piece);
            for (int64_t k = 0; k < slabs; k++) {
                copy_piece(&piece, &pieces[made]);
                if (slabs > 1)
                    slab_of(&pieces[made], even_edge(s.k, slabs, k), even_edge(s.k, slabs, k + 1),
                            k == 0, k + 1 == slabs);
                made++;
            }
        }
    }
    return made;
}
