/* host_copy.h — large copies of host memory shared among a few threads: the copies between a
 * caller's pageable memory and pinned staging blocks (uploads, and the commit of downloaded
 * outputs), which one core does at ~10 GB/s, under the bus's DMA rate (25-50 GB/s on an H100's
 * PCIe 5). A pool owns one copier (pool_host_copy); its threads start at its first large copy
 * and end with the pool. */
#ifndef CLOPS_HOST_COPY_H
#define CLOPS_HOST_COPY_H

#include <stddef.h>

/* Part `part` of `parts` of a copy; the parts are disjoint, and together the whole copy. */
typedef void (*host_copy_part_fn)(void *ctx, int part, int parts);

struct host_copier;

/* A copier with up to `helpers` threads beside its callers: as many as start (none is a
 * copier whose callers copy alone). NULL without host memory. */
struct host_copier *host_copier_new(int helpers);
/* Stops and joins its threads (no copy may be running), and frees it; NULL is a no-op. In a
 * fork()ed child of the process that made it, whose threads it does not have, it does nothing
 * (and host_copier_run copies on the caller alone there). */
void host_copier_free(struct host_copier *c);
/* The copier's threads and the caller run `fn` for each part in 0..parts-1 (parts at most
 * 1 + helpers), returning when all are done. The caller runs every part itself when `c` is
 * NULL or busy with another thread's copy: copies never wait for each other, and never fail. */
void host_copier_run(struct host_copier *c, host_copy_part_fn fn, void *ctx, int parts);
/* The same where `c` is free (and the copy worth cutting): 1 once the copy is done; else 0, and
 * nothing was copied. */
int host_copier_try_run(struct host_copier *c, host_copy_part_fn fn, void *ctx, int parts);
/* How many parts a copy of `bytes` is cut into on `c`: 1 under host_copy_min_bytes, else one
 * per thread, each at least host_copy_min_bytes / 2. */
int host_copier_parts(const struct host_copier *c, size_t bytes);

/* Copies under this many bytes stay on the caller's thread (starting a part costs a few us: a
 * wake-up and a wait; 4 MiB take ~400 us on one core). A variable only so that tests can make
 * small views take the parallel path. */
enum { HOST_COPY_MIN_BYTES = 4 << 20 };
extern size_t host_copy_min_bytes;
/* Helper threads of the copier a pool makes: 0, one per processor beside the caller (8 threads
 * in all at most); tests set more, so that copies are cut into many parts on any machine. */
extern int host_copy_helpers;

/* [begin, end) of `count` items for part `part` of `parts`: near-equal shares, in order. */
void host_copy_share(size_t count, int part, int parts, size_t *begin, size_t *end);

#endif
