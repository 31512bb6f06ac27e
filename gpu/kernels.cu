// The kernels of the MLP's training step on a GPU (package gpu). Matrices
// are row-major; a batch's inputs and labels arrive as CSR (int offsets),
// its inputs also by feature (CSC over the features it has), so that the
// first layer's gradient is written without atomics, in a fixed order.
// Blocks that reduce have 256 threads (THREADS), and reduce through shared
// memory in a fixed order: results do not depend on timing.

#define THREADS 256

// dst[r, :] = b + Σ_k val[k]·W[idx[k], :] for the rows of x: the first
// layer. A block per row, its threads over the columns.
extern "C" __global__ void spmm_bias(int out, const int* ptr, const int* idx, const float* val,
                                      const float* W, const float* b, float* dst) {
	int r = blockIdx.x;
	for (int j = threadIdx.x; j < out; j += blockDim.x) {
		float s = b[j];
		for (int k = ptr[r]; k < ptr[r + 1]; k++) s += val[k] * W[(long long)idx[k] * out + j];
		dst[(long long)r * out + j] = s;
	}
}

// The first layer's weight gradient on the batch's features (a block
// each): g = Σ over the batch's entries of feature f of val·up[row, :],
// written to gW[f, :] when lr is 0, else applied to the weights there by
// plain SGD (gW is then W: W[f, :] −= lr·g). fptr/frow/fval are the batch
// by feature.
extern "C" __global__ void spmm_t(int out, float lr, const int* feat, const int* fptr, const int* frow, const float* fval,
                                   const float* up, float* gW) {
	int f = blockIdx.x;
	for (int j = threadIdx.x; j < out; j += blockDim.x) {
		float s = 0;
		for (int e = fptr[f]; e < fptr[f + 1]; e++) s += fval[e] * up[(long long)frow[e] * out + j];
		float* w = &gW[(long long)feat[f] * out + j];
		if (lr == 0)
			*w = s;
		else
			*w -= lr * s;
	}
}

// dst[r, :] = b for rows × out.
extern "C" __global__ void broadcast(int rows, int out, const float* b, float* dst) {
	long long n = (long long)rows * out;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		dst[i] = b[i % out];
}

extern "C" __global__ void relu(int n, float* a) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		a[i] = a[i] > 0 ? a[i] : 0;
}

// g = 0 where the activation act is not positive (ReLU's gradient).
extern "C" __global__ void relu_grad(int n, float* g, const float* act) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		if (!(act[i] > 0)) g[i] = 0;
}

// dst[j] = Σ_r a[r, j]: a bias's gradient. A thread a column, the rows in
// order.
extern "C" __global__ void sum_rows(int rows, int cols, const float* a, float* dst) {
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += gridDim.x * blockDim.x) {
		float s = 0;
		for (int r = 0; r < rows; r++) s += a[(long long)r * cols + j];
		dst[j] = s;
	}
}

// The softmax cross-entropy of a row of logits z against its labels (the
// target spreads 1/k over its k labels): loss[r] = logΣexp(z) − mean of z
// over the labels; with grad, z becomes scale·(softmax(z) − target). A
// row without labels adds nothing and, with grad, reads zero. A block a
// row.
extern "C" __global__ void softmax_xent(int L, const int* yptr, const int* yidx, float scale, int grad,
                                         float* z, float* loss) {
	__shared__ float part[THREADS];
	__shared__ float target;
	int r = blockIdx.x, t = threadIdx.x;
	float* row = z + (long long)r * L;
	int k0 = yptr[r], k = yptr[r + 1] - k0;
	if (k == 0) {
		if (grad)
			for (int j = t; j < L; j += blockDim.x) row[j] = 0;
		if (t == 0) loss[r] = 0;
		return;
	}
	float m = -3.402823466e38f; // -FLT_MAX: NVRTC has no standard headers
	for (int j = t; j < L; j += blockDim.x) m = fmaxf(m, row[j]);
	part[t] = m;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (t < w) part[t] = fmaxf(part[t], part[t + w]);
		__syncthreads();
	}
	m = part[0];
	__syncthreads();
	float s = 0;
	for (int j = t; j < L; j += blockDim.x) s += expf(row[j] - m);
	part[t] = s;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (t < w) part[t] += part[t + w];
		__syncthreads();
	}
	float lse = m + logf(part[0]);
	if (t == 0) {
		float y = 0;
		for (int i = 0; i < k; i++) y += row[yidx[k0 + i]];
		target = y / k;
		loss[r] = lse - target;
	}
	__syncthreads();
	if (!grad) return;
	for (int j = t; j < L; j += blockDim.x) row[j] = scale * expf(row[j] - lse);
	__syncthreads();
	if (t == 0)
		for (int i = 0; i < k; i++) row[yidx[k0 + i]] -= scale / k;
}

// An optimizer's step over n parameters, as kernel.Update's rules (rule 0
// SGD, 1 momentum, 2 Adam; lr already holds Adam's bias correction, c2 is
// 1/√(1−β2ᵗ)); m and v are the rule's state.
extern "C" __global__ void update(int n, int rule, float lr, float wd, float mu, float b1, float b2, float eps, float c2,
                                  float* p, const float* g, float* m, float* v) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		float gi = g[i] + wd * p[i];
		if (rule == 0) {
			p[i] -= lr * gi;
		} else if (rule == 1) {
			m[i] = mu * m[i] + gi;
			p[i] -= lr * m[i];
		} else {
			m[i] = b1 * m[i] + (1 - b1) * gi;
			v[i] = b2 * v[i] + (1 - b2) * gi * gi;
			p[i] -= lr * m[i] / (sqrtf(v[i]) * c2 + eps);
		}
	}
}

// a *= m over n elements: a dropout mask applied to activations, or to
// their gradient.
extern "C" __global__ void mul(int n, float* a, const float* m) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		a[i] *= m[i];
}
