// The CUDA C a kernel of the backend may use, for the stand-in NVRTC
// (fake.c), which compiles a program with g++ and this header. A launch
// runs on the calling thread: a block's threads are fibers (ucontext),
// each run until it reaches __syncthreads or its end, in turn, so that
// every thread reaches a barrier before any passes it (a kernel without
// barriers runs its threads one after another, without fibers); blocks run one
// after another, so __shared__ arrays (static here) are the block's. It
// is deterministic. Warp-level primitives are not here: the kernels
// reduce through shared memory.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <ucontext.h>
#include <utility>
#include <vector>

// NVRTC compiles without the standard headers: what they define as macros
// is not a kernel's to use.
#undef FLT_MAX
#undef FLT_MIN
#undef INFINITY
#undef NAN

struct dim3 {
	unsigned x = 1, y = 1, z = 1;
};
typedef dim3 uint3;
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;

// The fibers of a block.
static ucontext_t emu_main;
static std::vector<ucontext_t> emu_fiber;
static std::vector<char> emu_stack;
static std::vector<uint3> emu_index;
static unsigned emu_current;
static void (*emu_body)(void **);
static void **emu_params;
static const size_t emu_stack_size = 64 << 10;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict

static inline void __syncthreads() { swapcontext(&emu_fiber[emu_current], &emu_main); }
static inline float atomicAdd(float *a, float v) {
	float o = *a;
	*a = o + v;
	return o;
}
static inline int atomicAdd(int *a, int v) {
	int o = *a;
	*a = o + v;
	return o;
}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }

template <typename... A, size_t... I>
static void emu_call(void (*k)(A...), void **p, std::index_sequence<I...>) {
	k(*static_cast<std::remove_reference_t<A> *>(p[I])...);
}

static void emu_start(int t) {
	emu_body(emu_params);
	emu_index[t].x = ~0u; // done
}

template <typename... A>
static int emu_launch(void (*k)(A...), int sync, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void **p) {
	static void (*kernel)(A...);
	kernel = k;
	emu_body = [](void **p) { emu_call(kernel, p, std::index_sequence_for<A...>{}); };
	emu_params = p;
	gridDim = {gx, gy, gz};
	blockDim = {bx, by, bz};
	unsigned n = bx * by * bz;
	if (!sync) {
		// No barrier: each thread runs to its end in turn.
		for (unsigned z = 0; z < gz; z++)
			for (unsigned y = 0; y < gy; y++)
				for (unsigned x = 0; x < gx; x++) {
					blockIdx = {x, y, z};
					for (unsigned t = 0; t < n; t++) {
						threadIdx = {t % bx, t / bx % by, t / (bx * by)};
						emu_body(p);
					}
				}
		return 0;
	}
	emu_fiber.resize(n);
	emu_index.resize(n);
	emu_stack.resize(n * emu_stack_size);
	for (unsigned z = 0; z < gz; z++)
		for (unsigned y = 0; y < gy; y++)
			for (unsigned x = 0; x < gx; x++) {
				blockIdx = {x, y, z};
				for (unsigned t = 0; t < n; t++) {
					emu_index[t] = {t % bx, t / bx % by, t / (bx * by)};
					getcontext(&emu_fiber[t]);
					emu_fiber[t].uc_stack.ss_sp = &emu_stack[t * emu_stack_size];
					emu_fiber[t].uc_stack.ss_size = emu_stack_size;
					emu_fiber[t].uc_link = &emu_main;
					makecontext(&emu_fiber[t], (void (*)())emu_start, 1, (int)t);
				}
				for (bool running = true; running;) {
					running = false;
					for (unsigned t = 0; t < n; t++) {
						if (emu_index[t].x == ~0u) continue;
						running = true;
						emu_current = t;
						threadIdx = emu_index[t];
						swapcontext(&emu_main, &emu_fiber[t]);
					}
				}
			}
	return 0;
}
