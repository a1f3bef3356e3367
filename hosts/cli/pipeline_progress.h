/* pipeline_progress.h — progress on stderr while `clops run` runs a step (pipeline_progress.c). */
#ifndef CLOPS_CLI_PIPELINE_PROGRESS_H
#define CLOPS_CLI_PIPELINE_PROGRESS_H

/* A live line "step k/n op run r/R [bar] 1.2 s" redrawn about 5 times a second by a timer
 * thread when `tty`; otherwise one plain line per finished step. */
struct progress;
struct progress *progress_start(int tty, int index, int count, const char *op);
/* Run `run` (from 0) of `runs` starts; `best_ms` is the best earlier run (INFINITY if none),
 * which scales the bar. */
void progress_run(struct progress *p, int run, int runs, double best_ms);
/* Stops the line and prints the step's outcome; frees `p` (NULL is a no-op). */
void progress_finish(struct progress *p, double total_ms, int ok);

#endif
