/* lapack.h — the prototypes of libclops_lapack.so's symbols as a C program declares them
 * (gfortran's convention: everything by pointer, hidden lengths of CHARACTER arguments last;
 * INTEGER is int in the LP64 symbols, int64_t in the ILP64 ones, suffixed 64_). */
#ifndef CLOPS_LAPACK_TEST_H
#define CLOPS_LAPACK_TEST_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
            const float *beta, float *c, const int *ldc, size_t transa_len, size_t transb_len);
void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc, size_t transa_len, size_t transb_len);
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetrs_(const char *trans, const int *n, const int *nrhs, const float *a, const int *lda,
             const int *ipiv, float *b, const int *ldb, int *info, size_t trans_len);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
             const int *ipiv, double *b, const int *ldb, int *info, size_t trans_len);
void sgesv_(const int *n, const int *nrhs, float *a, const int *lda, int *ipiv, float *b,
            const int *ldb, int *info);
void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
            const int *ldb, int *info);

void sgemm_64_(const char *transa, const char *transb, const int64_t *m, const int64_t *n,
               const int64_t *k, const float *alpha, const float *a, const int64_t *lda,
               const float *b, const int64_t *ldb, const float *beta, float *c, const int64_t *ldc,
               size_t transa_len, size_t transb_len);
void dgemm_64_(const char *transa, const char *transb, const int64_t *m, const int64_t *n,
               const int64_t *k, const double *alpha, const double *a, const int64_t *lda,
               const double *b, const int64_t *ldb, const double *beta, double *c,
               const int64_t *ldc, size_t transa_len, size_t transb_len);
void sgetrf_64_(const int64_t *m, const int64_t *n, float *a, const int64_t *lda, int64_t *ipiv,
                int64_t *info);
void dgetrf_64_(const int64_t *m, const int64_t *n, double *a, const int64_t *lda, int64_t *ipiv,
                int64_t *info);
void sgetrs_64_(const char *trans, const int64_t *n, const int64_t *nrhs, const float *a,
                const int64_t *lda, const int64_t *ipiv, float *b, const int64_t *ldb,
                int64_t *info, size_t trans_len);
void dgetrs_64_(const char *trans, const int64_t *n, const int64_t *nrhs, const double *a,
                const int64_t *lda, const int64_t *ipiv, double *b, const int64_t *ldb,
                int64_t *info, size_t trans_len);
void sgesv_64_(const int64_t *n, const int64_t *nrhs, float *a, const int64_t *lda, int64_t *ipiv,
               float *b, const int64_t *ldb, int64_t *info);
void dgesv_64_(const int64_t *n, const int64_t *nrhs, double *a, const int64_t *lda, int64_t *ipiv,
               double *b, const int64_t *ldb, int64_t *info);

/* Level 1, on the host: what libblastrampoline probes. */
int isamax_(const int *n, const float *x, const int *incx);
int64_t isamax_64_(const int64_t *n, const float *x, const int64_t *incx);
float sdot_(const int *n, const float *x, const int *incx, const float *y, const int *incy);
float sdot_64_(const int64_t *n, const float *x, const int64_t *incx, const float *y,
               const int64_t *incy);
float complex cdotc_(const int *n, const float complex *x, const int *incx, const float complex *y,
                     const int *incy);
float complex cdotc_64_(const int64_t *n, const float complex *x, const int64_t *incx,
                        const float complex *y, const int64_t *incy);
double complex zdotc_(const int *n, const double complex *x, const int *incx,
                      const double complex *y, const int *incy);
double complex zdotc_64_(const int64_t *n, const double complex *x, const int64_t *incx,
                         const double complex *y, const int64_t *incy);

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transa, enum CBLAS_TRANSPOSE transb,
                 int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);
void cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transa, enum CBLAS_TRANSPOSE transb,
                 int m, int n, int k, double alpha, const double *a, int lda, const double *b,
                 int ldb, double beta, double *c, int ldc);

/* BLAS/LAPACK calls of this process that ran in clops (its pool's successful operator calls). */
int clops_lapack_calls(void);

#endif
