/* test_threads.c — two threads calling dgemm_ at once on the top and bottom row halves of one
 * column-major C, as a threaded blocked code does: every round, every element of C must be the
 * product's, and the padding below each column untouched (every BLAS writes only C's M x N
 * elements). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lapack.h"

enum { M = 160, N = 48, K = 32, LDC = M + 3, ROUNDS = 40, HALF = M / 2 };
static const unsigned char gap_byte = 0xA5;

static double a[M * K], b[K * N], c[LDC * N], want[LDC * N];
static pthread_barrier_t start;

/* Rows [first, first + HALF) of C = A B (column-major, lda = M, ldb = K). */
static void *half_product(void *arg)
{
    const int first = *(const int *)arg, m = HALF, n = N, k = K, lda = M, ldb = K, ldc = LDC;
    const double alpha = 1.0, beta = 0.0;
    pthread_barrier_wait(&start);
    dgemm_("N", "N", &m, &n, &k, &alpha, a + first, &lda, b, &ldb, &beta, c + first, &ldc, 1, 1);
    return NULL;
}

int main(void)
{
    /* Small integers: the products are exact, so C compares with ==. */
    unsigned seed = 12345;
    for (int i = 0; i < M * K; i++)
        a[i] = (double)((seed = seed * 1103515245u + 12345u) >> 28) - 8.0;
    for (int i = 0; i < K * N; i++)
        b[i] = (double)((seed = seed * 1103515245u + 12345u) >> 28) - 8.0;
    memset(want, gap_byte, sizeof want);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            double sum = 0;
            for (int l = 0; l < K; l++)
                sum += a[i + l * M] * b[l + j * K];
            want[i + j * LDC] = sum;
        }
    /* The first call loads clops and builds its kernels here, on the main thread: the LLVM in
     * PoCL gives the thread that first compiles an alternate signal stack from malloc, which
     * AddressSanitizer fails to unmap when that thread exits. */
    const int first = 0;
    pthread_barrier_init(&start, NULL, 1);
    half_product((void *)&first);
    pthread_barrier_destroy(&start);
    int bad_rounds = 0;
    for (int round = 0; round < ROUNDS; round++) {
        memset(c, gap_byte, sizeof c);
        pthread_barrier_init(&start, NULL, 2);
        pthread_t threads[2];
        const int firsts[2] = {0, HALF};
        for (int t = 0; t < 2; t++)
            if (pthread_create(&threads[t], NULL, half_product, (void *)&firsts[t]) != 0) {
                printf("FAIL pthread_create\n");
                return 1;
            }
        for (int t = 0; t < 2; t++)
            pthread_join(threads[t], NULL);
        pthread_barrier_destroy(&start);
        int lost = 0;
        for (int i = 0; i < LDC * N; i++)
            lost += memcmp(&c[i], &want[i], sizeof c[i]) != 0;
        if (lost > 0 && bad_rounds++ < 3)
            printf("FAIL round %d: %d of %d elements of C (padding included) wrong\n", round, lost,
                   LDC * N);
    }
    printf("%s %d of %d rounds of two threads on the halves of one C lost updates\n",
           bad_rounds == 0 ? "PASS" : "FAIL", bad_rounds, ROUNDS);
    return bad_rounds == 0 ? 0 : 1;
}
