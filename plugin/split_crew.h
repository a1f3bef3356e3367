/* split_crew.h — the threads a pool keeps for the splitter's workers (split.c), so that a call
 * split across devices starts no thread: they are made at the first split call that needs
 * them, wait for work between calls, and end with the pool. A run hands them its workers; the
 * caller runs the first itself, and any that no thread has taken when it is done (every thread
 * busy with another call's workers, one that would not start, a fork()ed child, which has none
 * of them): a run never waits for a thread that is not coming, and its workers are correct
 * whichever thread runs them and in whatever order (they take units from shared lists until
 * none are left). */
#ifndef CLOPS_SPLIT_CREW_H
#define CLOPS_SPLIT_CREW_H

#include <stdint.h>

struct split_crew;

/* A crew with no thread yet; NULL without host memory. */
struct split_crew *split_crew_new(void);
/* Stops and joins its threads (no run may be under way), and frees it; NULL is a no-op. In a
 * fork()ed child it only lets go of the memory. */
void split_crew_free(struct split_crew *crew);
/* Runs fn(args[i]) for i in 0..count-1, args[0] on the calling thread, the others on the
 * crew's threads (started as needed, up to `count - 1` of them in all) or, where none takes
 * one in time, on the calling thread after its own; returns once all have returned. crew NULL:
 * all on the calling thread. */
void split_crew_run(struct split_crew *crew, void (*fn)(void *), void *const *args, int32_t count);
/* Threads the crew holds (for tests). */
int32_t split_crew_threads(const struct split_crew *crew);

#endif
