/* slurm_win32.c — `clops slurm` in the Windows build: refused, naming why. Its script runs
 * clops on a Slurm cluster's nodes, which run Linux: a POSIX shell script with the absolute
 * paths of a Linux clops (/proc/self/exe), given to sbatch. `clops run --shard` and `clops
 * gather`, which need no Slurm, work on Windows too. */
#include <stdio.h>

#include "cli.h"

int slurm_command(const struct slurm_options *o)
{
    (void)o;
    fprintf(stderr, "clops: slurm: not available in the Windows build: the job array's script "
                    "runs a Linux clops on the Slurm cluster's nodes; run 'clops slurm' there "
                    "('clops run --shard K/N' and 'clops gather' work here)\n");
    return CLI_FAILED;
}
