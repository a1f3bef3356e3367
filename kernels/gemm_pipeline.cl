/* gemm_pipeline.cl — what the GEMM kernels fed by cp.async share (NVIDIA GPUs of compute
 * capability 8.0 and later, through inline PTX): the copies' groups, the order of the blocks of C
 * and the copies' pipeline. Built in front of gemm_simt.cl (f32 on the FP32 units), of
 * gemm_mma_core.cl + gemm_mma.cl (f64 on the FP64 tensor cores, f32 on the TF32 ones) and of
 * gemm_mma_core.cl + gemm_tf32.cl (gemm's tf32 from packed operands): gemm_kernel.c builds them
 * only for the devices it sends there, as any other compiler would reject the asm. The kernels'
 * arguments and contract are gemm.cl's; tile sizes, the instruction and the passes are -D
 * options. */

#ifndef GROUP_M
#define GROUP_M 8
#endif

/* With -DCARRY a kernel computes one slab of K of a product cut along K, as gemm.cl's does: it
 * takes W, offW, ldw and carry after its usual arguments; carry & CARRY_IN starts each element's
 * sum from W (C's shape, row stride ldw) instead of 0, & CARRY_OUT leaves the sum there and C
 * untouched. The slabs are whole TILE_K steps, in order: C is the one launch's, bit for bit. */
#define CARRY_IN 1
#define CARRY_OUT 2
#ifdef CARRY
#define CARRY_PARAMS(type) , __global type *W, const long offW, const long ldw, const int carry
#else
#define CARRY_PARAMS(type)
#endif

/* ---- The copies' groups and the order of the blocks ----------------------------------------- */

static void copies_commit(void)
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

/* Waits until at most `pending` of this work-item's committed groups are still in flight. */
#define COPIES_WAIT(pending) asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory")

/* The block of C of work-group `group`: groups run down bands of GROUP_M block rows, column by
 * column, so that the groups resident at once share their A rows and B columns in L2. */
static void block_of_group(int m, int n, int *bm, int *bn)
{
    const int groups_m = (m + TILE_M - 1) / TILE_M, groups_n = (n + TILE_N - 1) / TILE_N;
    const long group = (long)get_group_id(0);
    const long per_band = (long)GROUP_M * groups_n;
    const int band = (int)(group / per_band);
    const int first = band * GROUP_M;
    const int rows = min(groups_m - first, GROUP_M);
    const int in_band = (int)(group - band * per_band);
    *bm = first + in_band % rows;
    *bn = in_band / rows;
}

/* The copies' pipeline of every kernel here: tile kt goes to stage kt % STAGES, copied STAGES - 1
 * tiles ahead of its use. Each iteration commits one group of copies (empty past the last tile),
 * so that waiting for all but the STAGES - 2 newest groups waits for tile kt; the barrier then
 * publishes every work-item's copies, and tells that every warp is done with tile kt - 1, whose
 * stage the copies issued next overwrite. COPY(stage, kt) issues this work-item's copies of tile
 * kt into a stage, MULTIPLY(stage) multiplies a stage's tiles into the accumulators; tiles_k = 0
 * copies nothing (A and B may then be NULL). A macro, so that the accumulators stay in
 * registers whatever a compiler decides about inlining. */
#define RUN_PIPELINE(tiles_k, COPY, MULTIPLY)                                                      \
    do {                                                                                           \
        for (int s_ = 0; s_ < STAGES - 1; s_++) {                                                  \
            if (s_ < (tiles_k))                                                                    \
                COPY(s_, s_);                                                                      \
            copies_commit();                                                                       \
        }                                                                                          \
        int stage_ = 0, fill_ = STAGES - 1;                                                        \
        for (int kt_ = 0; kt_ < (tiles_k); kt_++) {                                                \
            COPIES_WAIT(STAGES - 2);                                                               \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            if (kt_ + STAGES - 1 < (tiles_k))                                                      \
                COPY(fill_, kt_ + STAGES - 1);                                                     \
            copies_commit();                                                                       \
            fill_ = fill_ + 1 == STAGES ? 0 : fill_ + 1;                                           \
            MULTIPLY(stage_);                                                                      \
            stage_ = stage_ + 1 == STAGES ? 0 : stage_ + 1;                                        \
        }                                                                                          \
    } while (0)
