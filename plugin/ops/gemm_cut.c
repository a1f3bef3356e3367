/* gemm_cut.c — a GEMM cut into parts for a call split across devices (op_impl's cut,
 * call_split.c): C = alpha op(A) op(B) + beta C by blocks of C's longer side, columns (each part
 * reads all of op(A) and its columns of op(B)) or rows (all of op(B), its rows of op(A)): the
 * operand every part reads is the smaller one. Block edges fall on multiples of GEMM_CUT_ALIGN,
 * a multiple of every tile the kernel uses, so that each part's tiles are the whole call's and,
 * where the part is computed by the same kernel, its C is the same, bit for bit. */
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

int32_t gemm_cut(const struct op_call *call, int32_t count, const double *shares,
                 struct op_part *parts)
{
    const union op_value *v = call->values;
    const struct clops_tensor *a = v[P_A].tensor, *c = v[P_C].tensor;
    if (count < 2)
        return 0;
    const int trans_a = v[P_TRANS_A].i32 != CLOPS_NO_TRANS;
    const int trans_b = v[P_TRANS_B].i32 != CLOPS_NO_TRANS;
    const int64_t m = c->shape[0], n = c->shape[1];
    const int64_t k = trans_a ? a->shape[0] : a->shape[1];
    const int by_columns = n >= m;
    const int64_t side = by_columns ? n : m, other = by_columns ? m : n;
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
        struct op_part *part = &parts[p];
        memcpy(part->values, v, sizeof part->values);
        part->flops = 0;
        if (stop <= at)
            continue; /* a share too small for one block: no part on that device */
        for (int32_t i = P_A; i <= P_C; i++) {
            part->tensors[i] = *v[i].tensor;
            part->values[i].tensor = &part->tensors[i];
        }
        if (by_columns) {
            cut_view(&part->tensors[P_C], 0, at, stop - at);
            cut_view(&part->tensors[P_B], trans_b, at, stop - at); /* op(B)'s columns */
        } else {
            cut_view(&part->tensors[P_C], 1, at, stop - at);
            cut_view(&part->tensors[P_A], !trans_a, at, stop - at); /* op(A)'s rows */
        }
        part->flops = 2.0 * (double)(stop - at) * (double)other * (double)k;
        made++;
    }
    return made;
}
