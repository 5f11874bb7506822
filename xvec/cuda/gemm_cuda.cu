/* gemm_cuda.cu — row-major GEMMs in the trainer's precision, with cuBLASLt
 * autotuning (see gemm_cuda.h). */
#include "xvec_cuda_impl.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#define XC_TUNED_MAX 64
#define XC_LT_ALGOS 8
#define XC_LT_WORKSPACE ((size_t)32 << 20)
#define XC_LT_TOL 1e-2f

/* A GEMM shape that autotune has timed, and how it runs from then on. */
struct xc_tuned {
	int ta, tb, M, N, K, lda, ldb, ldc;
	uint32_t align; /* of the operands it was tuned with */
	int use_lt;     /* 0: cublasGemmEx */
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (our B), B (our A), C = D */
	cublasLtMatmulAlgo_t algo;
};

struct gemm_cuda {
	int precision;
	cudaStream_t stream;
	cublasHandle_t blas;
	void *bf[2]; /* bf16 GEMM operands */
	size_t bf_cap[2];
	/* autotuned single GEMMs */
	cublasLtHandle_t lt;
	void *lt_ws;
	struct xc_tuned tuned[XC_TUNED_MAX];
	int ntuned, tuning;
	FILE *log;
	float *check, *diff; /* reference result, float[2] */
	size_t check_cap;
};

/* Elements a row-major operand spans: batch entries `stride` apart, each
 * rows x cols with leading dimension ld. */
static size_t xc_extent(int rows, int cols, int ld, long long stride, int batch)
{
	return (size_t)(batch - 1) * (size_t)stride + (size_t)(rows - 1) * ld + cols;
}

/* The bfloat16 copy of n floats at src in scratch slot k. */
static int xc_bf16(struct gemm_cuda *g, int k, const float *src, size_t n, const void **out,
		   char *err, size_t errlen)
{
	if (n > g->bf_cap[k]) {
		/* grows only while the first steps meet their largest operands;
		 * GEMMs queued earlier may still read the old copy */
		XC_CUDA(cudaStreamSynchronize(g->stream),
			"finish the GEMMs before a bf16 scratch grows");
		cudaFree(g->bf[k]);
		g->bf[k] = NULL;
		g->bf_cap[k] = 0;
		XC_CUDA(cudaMalloc(&g->bf[k], n * 2), "allocate a bf16 GEMM operand");
		g->bf_cap[k] = n;
	}
	tdnn_cuda_to_bf16(src, n, g->bf[k], g->stream);
	*out = g->bf[k];
	return 0;
}

/* ---- cuBLASLt algorithm choice (autotune) ------------------------------ */

/* The alignment (bytes, a power of two up to 256) common to three pointers:
 * cuBLASLt's algorithms may need more than a float's, and one tuned on
 * aligned operands must not run on less aligned ones. */
static uint32_t xc_align(const void *a, const void *b, const void *c)
{
	uintptr_t v = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c;
	uint32_t al = 256;

	while (al > 1 && v % al)
		al >>= 1;
	return al;
}

static struct xc_tuned *xc_tuned_find(struct gemm_cuda *g, int ta, int tb, int M, int N, int K,
				      int lda, int ldb, int ldc, uint32_t align)
{
	for (int i = 0; i < g->ntuned; i++) {
		struct xc_tuned *t = &g->tuned[i];

		if (t->ta == ta && t->tb == tb && t->M == M && t->N == N && t->K == K &&
		    t->lda == lda && t->ldb == ldb && t->ldc == ldc && t->align == align)
			return t;
	}
	return NULL;
}

static void xc_tuned_free(struct xc_tuned *t)
{
	if (t->desc)
		cublasLtMatmulDescDestroy(t->desc);
	if (t->la)
		cublasLtMatrixLayoutDestroy(t->la);
	if (t->lb)
		cublasLtMatrixLayoutDestroy(t->lb);
	if (t->lc)
		cublasLtMatrixLayoutDestroy(t->lc);
	t->desc = NULL;
	t->la = t->lb = t->lc = NULL;
	t->use_lt = 0;
}

static int xc_lt_run(struct gemm_cuda *g, struct xc_tuned *t, const void *a, const void *b,
		     float beta, float *C, char *err, size_t errlen)
{
	float alpha = 1.0f;
	cublasStatus_t st =
		cublasLtMatmul(g->lt, t->desc, &alpha, b, t->la, a, t->lb, &beta, C, t->lc, C,
			       t->lc, &t->algo, g->lt_ws, XC_LT_WORKSPACE, g->stream);

	if (st != CUBLAS_STATUS_SUCCESS)
		return status_fail(err, errlen, -EIO,
				   "x-vector cuda: cuBLASLt GEMM %d x %d x %d: %s", t->M, t->N,
				   t->K, cublasGetStatusString(st));
	return 0;
}

/* Milliseconds per run of cublasGemmEx (lt 0) or of cuBLASLt with t->algo;
 * -1 when cuBLAS refuses to run it. */
static int xc_time_gemm(struct gemm_cuda *g, struct xc_tuned *t, int lt, const void *a, int lda,
			const void *b, int ldb, cudaDataType_t ty, cublasComputeType_t ct, float *C,
			float *ms, char *err, size_t errlen)
{
	cudaEvent_t e0, e1;
	float alpha = 1.0f, beta = 0.0f;

	*ms = -1.0f;
	cublasOperation_t oa = t->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
			  ob = t->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasStatus_t st = CUBLAS_STATUS_SUCCESS;

	XC_CUDA(cudaEventCreate(&e0), "create an event");
	if (cudaEventCreate(&e1) != cudaSuccess) {
		cudaEventDestroy(e0);
		return status_fail(err, errlen, -EIO, "x-vector cuda: cannot create an event");
	}
	for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++) {
		if (i == 1)
			cudaEventRecord(e0, g->stream);
		if (lt)
			st = cublasLtMatmul(g->lt, t->desc, &alpha, b, t->la, a, t->lb, &beta, C,
					    t->lc, C, t->lc, &t->algo, g->lt_ws, XC_LT_WORKSPACE,
					    g->stream);
		else
			st = cublasGemmEx(g->blas, ob, oa, t->N, t->M, t->K, &alpha, b, ty, ldb, a,
					  ty, lda, &beta, C, CUDA_R_32F, t->ldc, ct,
					  CUBLAS_GEMM_DEFAULT);
	}
	cudaEventRecord(e1, g->stream);
	cudaError_t e = cudaEventSynchronize(e1);
	if (st == CUBLAS_STATUS_SUCCESS && e == cudaSuccess) {
		cudaEventElapsedTime(ms, e0, e1);
		*ms /= 3.0f;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	if (e != cudaSuccess)
		return status_fail(err, errlen, -EIO, "x-vector cuda: GEMM autotune: %s",
				   cudaGetErrorString(e));
	if (st != CUBLAS_STATUS_SUCCESS)
		*ms = -1.0f; /* this candidate cannot run: not an error */
	return 0;
}

/* Relative difference of C from the reference in g->check; waits. */
static int xc_check_result(struct gemm_cuda *g, const float *C, int M, int N, int ldc, float *rel,
			   char *err, size_t errlen)
{
	float h[2] = { 0.0f, 0.0f };

	XC_CUDA(cudaMemsetAsync(g->diff, 0, sizeof(h), g->stream), "clear the check");
	tdnn_cuda_max_diff(C, g->check, M, N, ldc, g->diff, g->stream);
	XC_CUDA(cudaMemcpyAsync(h, g->diff, sizeof(h), cudaMemcpyDeviceToHost, g->stream),
		"read the check");
	XC_CUDA(cudaStreamSynchronize(g->stream), "check a GEMM algorithm");
	*rel = h[0] == h[0] ? h[0] / (h[1] > 1e-30f ? h[1] : 1e-30f) : h[0];
	return 0;
}

/* A cuBLASLt preference: the workspace we have, the alignment the
 * operands have. 0, or nonzero with nothing left to free. */
static int xc_lt_pref(cublasLtMatmulPreference_t *pref, uint32_t align)
{
	uint64_t ws = XC_LT_WORKSPACE;
	const cublasLtMatmulPreferenceAttributes_t al[] = {
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
	};

	if (cublasLtMatmulPreferenceCreate(pref) != CUBLAS_STATUS_SUCCESS) {
		*pref = NULL;
		return -1;
	}
	int ok = cublasLtMatmulPreferenceSetAttribute(*pref,
						      CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
						      sizeof(ws)) == CUBLAS_STATUS_SUCCESS;
	for (size_t i = 0; ok && i < sizeof(al) / sizeof(al[0]); i++)
		ok = cublasLtMatmulPreferenceSetAttribute(*pref, al[i], &align, sizeof(align)) ==
		     CUBLAS_STATUS_SUCCESS;
	if (ok)
		return 0;
	cublasLtMatmulPreferenceDestroy(*pref);
	*pref = NULL;
	return -1;
}

/* t's cuBLASLt descriptors (column-major: D (N x M) = op(our B) op(our A),
 * as cublasGemmEx is called) and the heuristic's candidates for them, up to
 * XC_LT_ALGOS into res; *nres is 0 where cuBLASLt cannot describe the
 * product (t's descriptors are then freed with t). */
static void xc_lt_candidates(struct gemm_cuda *g, struct xc_tuned *t, cudaDataType_t ty,
			     cublasComputeType_t ct, cublasLtMatmulHeuristicResult_t *res,
			     int *nres)
{
	cublasOperation_t oa = t->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
			  ob = t->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasLtMatmulPreference_t pref;
	int M = t->M, N = t->N, K = t->K;

	*nres = 0;
	if (cublasLtMatmulDescCreate(&t->desc, ct, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatmulDescSetAttribute(t->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ob, sizeof(ob)) !=
		    CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatmulDescSetAttribute(t->desc, CUBLASLT_MATMUL_DESC_TRANSB, &oa, sizeof(oa)) !=
		    CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatrixLayoutCreate(&t->la, ty, t->tb ? K : N, t->tb ? N : K, t->ldb) !=
		    CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatrixLayoutCreate(&t->lb, ty, t->ta ? M : K, t->ta ? K : M, t->lda) !=
		    CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatrixLayoutCreate(&t->lc, CUDA_R_32F, N, M, t->ldc) != CUBLAS_STATUS_SUCCESS ||
	    xc_lt_pref(&pref, t->align))
		return;
	/* the preference is only read by the heuristic: freed here, on every path */
	if (cublasLtMatmulAlgoGetHeuristic(g->lt, t->desc, t->la, t->lb, t->lc, t->lc, pref,
					   XC_LT_ALGOS, res, nres) != CUBLAS_STATUS_SUCCESS)
		*nres = 0;
	cublasLtMatmulPreferenceDestroy(pref);
}

/* Time each usable candidate of res on a and b, check its result against
 * the reference in g->check; *best: the fastest correct one's index (-1:
 * none beat *best_ms, which then holds the fastest time). */
static int xc_lt_pick(struct gemm_cuda *g, struct xc_tuned *t,
		      const cublasLtMatmulHeuristicResult_t *res, int nres, const void *a,
		      const void *b, cudaDataType_t ty, cublasComputeType_t ct, float *C,
		      float *best_ms, int *best, int *rejected, char *err, size_t errlen)
{
	float ms = -1.0f, rel = 0.0f;

	*best = -1;
	*rejected = 0;
	for (int i = 0; i < nres; i++) {
		if (res[i].state != CUBLAS_STATUS_SUCCESS || res[i].workspaceSize > XC_LT_WORKSPACE)
			continue;
		t->algo = res[i].algo;
		XC_TRY(xc_time_gemm(g, t, 1, a, t->lda, b, t->ldb, ty, ct, C, &ms, err, errlen));
		if (ms < 0.0f)
			continue;
		XC_TRY(xc_check_result(g, C, t->M, t->N, t->ldc, &rel, err, errlen));
		if (!(rel <= XC_LT_TOL)) {
			(*rejected)++;
			continue;
		}
		if (ms < *best_ms) {
			*best_ms = ms;
			*best = i;
		}
	}
	return 0;
}

/* Room in g->check for a result of nC floats. */
static int xc_check_reserve(struct gemm_cuda *g, size_t nC, char *err, size_t errlen)
{
	if (nC <= g->check_cap)
		return 0;
	cudaFree(g->check);
	g->check = NULL;
	g->check_cap = 0;
	XC_CUDA(cudaMalloc((void **)&g->check, sizeof(float) * nC), "allocate a GEMM check");
	g->check_cap = nC;
	return 0;
}

/* Time cublasGemmEx and cuBLASLt's candidates on this shape (operands a,
 * b already in the GEMM's input type), record the fastest correct one, and
 * leave cublasGemmEx's result in C. On an error the shape is left to
 * cublasGemmEx, with nothing of cuBLASLt's held. */
static int xc_tune(struct gemm_cuda *g, int ta, int tb, int M, int N, int K, const void *a, int lda,
		   const void *b, int ldb, cudaDataType_t ty, cublasComputeType_t ct, float *C,
		   int ldc, uint32_t align, char *err, size_t errlen)
{
	struct xc_tuned *t = &g->tuned[g->ntuned];
	size_t nC = (size_t)(M - 1) * ldc + N;
	cublasLtMatmulHeuristicResult_t res[XC_LT_ALGOS];
	float base_ms = -1.0f, best_ms;
	int nres = 0, best = -1, rejected = 0, rc;

	if (g->ntuned == XC_TUNED_MAX)
		return status_fail(err, errlen, -EIO,
				   "x-vector cuda: more than %d GEMM shapes to tune", XC_TUNED_MAX);
	memset(t, 0, sizeof(*t));
	t->ta = ta, t->tb = tb, t->M = M, t->N = N, t->K = K, t->lda = lda, t->ldb = ldb,
	t->ldc = ldc;
	t->align = align;
	g->ntuned++;
	XC_TRY(xc_check_reserve(g, nC, err, errlen));
	XC_TRY(xc_time_gemm(g, t, 0, a, lda, b, ldb, ty, ct, C, &base_ms, err, errlen));
	if (base_ms < 0.0f)
		return status_fail(err, errlen, -EIO, "x-vector cuda: GEMM %d x %d x %d failed", M,
				   N, K);
	XC_CUDA(cudaMemcpyAsync(g->check, C, sizeof(float) * nC, cudaMemcpyDeviceToDevice,
				g->stream),
		"keep a reference GEMM result");
	best_ms = base_ms;
	xc_lt_candidates(g, t, ty, ct, res, &nres);
	rc = xc_lt_pick(g, t, res, nres, a, b, ty, ct, C, &best_ms, &best, &rejected, err, errlen);
	if (rc == 0 && best >= 0) {
		t->algo = res[best].algo;
		t->use_lt = 1;
	} else {
		xc_tuned_free(t);
	}
	if (rc)
		return rc;
	if (g->log)
		fprintf(g->log,
			"xvec autotune: GEMM %d x %d x %d (%s%s, %s, %u-byte aligned): "
			"cublasGemmEx %.3f ms, cuBLASLt %d candidates (%d rejected by the check) -> "
			"%s %.3f ms\n",
			M, N, K, ta ? "T" : "N", tb ? "T" : "N",
			xvec_cuda_precision_name(g->precision), align, base_ms, nres, rejected,
			best >= 0 ? "cuBLASLt" : "cublasGemmEx", best_ms);
	XC_CUDA(cudaMemcpyAsync(C, g->check, sizeof(float) * nC, cudaMemcpyDeviceToDevice,
				g->stream),
		"restore the reference GEMM result");
	return 0;
}

/* Row-major C (M x N, ldc) = op(A) (M x K) op(B) (K x N) + beta C, for
 * `batch` entries strideA/B/C apart (stride 0: shared). ta/tb: the operand
 * is stored transposed. cuBLAS being column-major, this is
 * C^T = op(B)^T op(A)^T with the operands swapped. In bf16 an operand not
 * already in bfloat16 is rounded into scratch first. */
int gemm_cuda_run_bf16(struct gemm_cuda *g, int ta, int tb, int M, int N, int K, const void *A,
		       int a_bf16, int lda, long long sA, const void *Bm, int b_bf16, int ldb,
		       long long sB, float beta, float *C, int ldc, long long sC, int batch,
		       char *err, size_t errlen)
{
	const void *a = A, *b = Bm;
	cudaDataType_t ty = CUDA_R_32F;
	/* tf32: cuBLAS converts the float operands itself, by rounding or by
	 * dropping the low 13 bits (undocumented). They are not rounded here
	 * first: that would be a pass over every operand of every product (an
	 * activation K times with the offset strategy) in the mode chosen for
	 * speed, and training does not need one or the other. The device tests
	 * bound a run by references of both kinds (tests/xvec/xvec_sensitivity.h). */
	cublasComputeType_t ct = g->precision == XVEC_PRECISION_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
								     : CUBLAS_COMPUTE_32F;
	cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	float alpha = 1.0f;
	cublasStatus_t st;

	if (g->precision != XVEC_PRECISION_BF16 && (a_bf16 || b_bf16))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: a bfloat16 operand in %s precision",
				   xvec_cuda_precision_name(g->precision));
	if (g->precision == XVEC_PRECISION_BF16) {
		if (!a_bf16)
			XC_TRY(xc_bf16(g, 0, (const float *)A,
				       xc_extent(ta ? K : M, ta ? M : K, lda, sA, batch), &a, err,
				       errlen));
		if (!b_bf16)
			XC_TRY(xc_bf16(g, 1, (const float *)Bm,
				       xc_extent(tb ? N : K, tb ? K : N, ldb, sB, batch), &b, err,
				       errlen));
		ty = CUDA_R_16BF;
	}
	if (batch == 1) {
		uint32_t align = xc_align(a, b, C);
		struct xc_tuned *t = xc_tuned_find(g, ta, tb, M, N, K, lda, ldb, ldc, align);

		if (!t && g->tuning && beta == 0.0f)
			return xc_tune(g, ta, tb, M, N, K, a, lda, b, ldb, ty, ct, C, ldc, align,
				       err, errlen);
		if (t && t->use_lt)
			return xc_lt_run(g, t, a, b, beta, C, err, errlen);
		st = cublasGemmEx(g->blas, ob, oa, N, M, K, &alpha, b, ty, ldb, a, ty, lda, &beta,
				  C, CUDA_R_32F, ldc, ct, CUBLAS_GEMM_DEFAULT);
	} else
		st = cublasGemmStridedBatchedEx(g->blas, ob, oa, N, M, K, &alpha, b, ty, ldb, sB, a,
						ty, lda, sA, &beta, C, CUDA_R_32F, ldc, sC, batch,
						ct, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS)
		return status_fail(err, errlen, -EIO,
				   "x-vector cuda: GEMM %d x %d x %d (batch %d): %s", M, N, K,
				   batch, cublasGetStatusString(st));
	return 0;
}

int gemm_cuda_run(struct gemm_cuda *g, int ta, int tb, int M, int N, int K, const float *A, int lda,
		  long long sA, const float *Bm, int ldb, long long sB, float beta, float *C,
		  int ldc, long long sC, int batch, char *err, size_t errlen)
{
	return gemm_cuda_run_bf16(g, ta, tb, M, N, K, A, 0, lda, sA, Bm, 0, ldb, sB, beta, C, ldc,
				  sC, batch, err, errlen);
}

int gemm_cuda_create(struct gemm_cuda **out, cudaStream_t stream, int precision, FILE *log,
		     char *err, size_t errlen)
{
	*out = NULL;
	struct gemm_cuda *g = (struct gemm_cuda *)calloc(1, sizeof(*g));
	if (!g)
		return status_fail(err, errlen, -ENOMEM, "x-vector cuda: out of memory");
	g->precision = precision;
	g->stream = stream;
	g->log = log;
	if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) {
		free(g);
		return status_fail(err, errlen, -EIO, "x-vector cuda: cannot initialize cuBLAS");
	}
	if (cublasSetStream(g->blas, stream) != CUBLAS_STATUS_SUCCESS) {
		gemm_cuda_destroy(g);
		return status_fail(err, errlen, -EIO,
				   "x-vector cuda: cannot set the cuBLAS stream");
	}
	*out = g;
	return 0;
}

void gemm_cuda_destroy(struct gemm_cuda *g)
{
	if (!g)
		return;
	if (g->stream)
		cudaStreamSynchronize(g->stream);
	cudaFree(g->bf[0]);
	cudaFree(g->bf[1]);
	for (int i = 0; i < g->ntuned; i++)
		xc_tuned_free(&g->tuned[i]);
	if (g->lt)
		cublasLtDestroy(g->lt);
	cudaFree(g->lt_ws);
	cudaFree(g->check);
	cudaFree(g->diff);
	if (g->blas)
		cublasDestroy(g->blas);
	free(g);
}

int gemm_cuda_tune_begin(struct gemm_cuda *g, char *err, size_t errlen)
{
	if (!g->lt && cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS) {
		g->lt = NULL;
		return status_fail(err, errlen, -EIO, "x-vector cuda: cannot initialize cuBLASLt");
	}
	if (!g->lt_ws)
		XC_CUDA(cudaMalloc(&g->lt_ws, XC_LT_WORKSPACE), "allocate the cuBLASLt workspace");
	if (!g->diff)
		XC_CUDA(cudaMalloc((void **)&g->diff, 2 * sizeof(float)), "allocate a GEMM check");
	return 0;
}

void gemm_cuda_set_tuning(struct gemm_cuda *g, int on)
{
	g->tuning = on;
}
