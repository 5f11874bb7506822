/* gemm_cuda.h — row-major matrix products on a CUDA stream, in the trainer's
 * precision, for the GPU x-vector TDNN (xvec_cuda.cu).
 *
 * gemm_cuda_run is C = op(A) op(B) + beta C in row-major terms, as cblas_sgemm
 * with CblasRowMajor reads, optionally over a strided batch; cuBLAS being
 * column-major, it runs C^T = op(B)^T op(A)^T with the operands swapped.
 *
 * Precision (enum xvec_precision): fp32 computes in CUBLAS_COMPUTE_32F,
 * tf32 in CUBLAS_COMPUTE_32F_FAST_TF32; bf16 multiplies bfloat16 inputs and
 * accumulates and writes float32: an operand the caller already holds in
 * bfloat16 (gemm_cuda_run_bf16: the trainer's weight copies, its spliced
 * activations) is used as it is, a float one is rounded into a scratch copy
 * on the device just before the product.
 *
 * Autotune: between gemm_cuda_tune_begin and gemm_cuda_set_tuning(0), every
 * single (non-batched) product with beta 0 of a shape not seen before is
 * timed with cublasGemmEx and with the algorithms cuBLASLt's heuristic
 * proposes (up to 8); each candidate's result is checked against
 * cublasGemmEx's (relative difference at most 1e-2: a wrong algorithm or
 * layout is rejected, never used) and the fastest correct one is kept for
 * that exact shape and operand alignment from then on. Choices are logged.
 *
 * All functions return 0 or a negative code with a sentence in err. */
#ifndef FEEDER_GEMM_CUDA_H
#define FEEDER_GEMM_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gemm_cuda;

/* Products on stream in precision (XVEC_PRECISION_*); log (may be NULL)
 * receives autotune's choices. */
int gemm_cuda_create(struct gemm_cuda **out, cudaStream_t stream, int precision, FILE *log,
		     char *err, size_t errlen);
/* Waits for the stream, frees everything. NULL is a no-op. */
void gemm_cuda_destroy(struct gemm_cuda *g);

/* Row-major C (M x N, ldc) = op(A) (M x K) op(B) (K x N) + beta C, for
 * `batch` entries strideA/B/C apart (stride 0: shared). ta/tb: the operand
 * is stored transposed. */
int gemm_cuda_run(struct gemm_cuda *g, int ta, int tb, int M, int N, int K, const float *A, int lda,
		  long long sA, const float *Bm, int ldb, long long sB, float beta, float *C,
		  int ldc, long long sC, int batch, char *err, size_t errlen);

/* gemm_cuda_run with operands that may already be bfloat16 (a_bf16, b_bf16:
 * A or Bm points to bfloat16 values, strides and leading dimensions in
 * elements as for floats); only in bf16 precision, else FEEDER_EINVAL. */
int gemm_cuda_run_bf16(struct gemm_cuda *g, int ta, int tb, int M, int N, int K, const void *A,
		       int a_bf16, int lda, long long sA, const void *Bm, int b_bf16, int ldb,
		       long long sB, float beta, float *C, int ldc, long long sC, int batch,
		       char *err, size_t errlen);

/* Prepare autotune (cuBLASLt, its workspace) and start tuning new shapes. */
int gemm_cuda_tune_begin(struct gemm_cuda *g, char *err, size_t errlen);
void gemm_cuda_set_tuning(struct gemm_cuda *g, int on);

#ifdef __cplusplus
}
#endif

#endif
