// The CUDA C a kernel of the backend may use, for the stand-in NVRTC
// (fake.c), which compiles a program with g++ and this header: a launch
// runs a block's threads as threads of the CPU, one block after another,
// so that __shared__ arrays (static here) are the block's, and
// __syncthreads is a barrier. Warp-level primitives are not here: the
// kernels reduce through shared memory.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

struct dim3 {
	unsigned x = 1, y = 1, z = 1;
};
typedef dim3 uint3;
static thread_local uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static pthread_barrier_t emu_barrier;
static std::mutex emu_atomics;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict

static inline void __syncthreads() { pthread_barrier_wait(&emu_barrier); }
static inline float atomicAdd(float *a, float v) {
	std::lock_guard<std::mutex> l(emu_atomics);
	float o = *a;
	*a = o + v;
	return o;
}
static inline int atomicAdd(int *a, int v) {
	std::lock_guard<std::mutex> l(emu_atomics);
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

template <typename... A>
static int emu_launch(void (*k)(A...), unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void **p) {
	gridDim = {gx, gy, gz};
	blockDim = {bx, by, bz};
	unsigned n = bx * by * bz;
	pthread_barrier_init(&emu_barrier, nullptr, n);
	std::vector<std::thread> ts;
	for (unsigned t = 0; t < n; t++) {
		ts.emplace_back([=] {
			threadIdx = {t % bx, t / bx % by, t / (bx * by)};
			for (unsigned z = 0; z < gz; z++)
				for (unsigned y = 0; y < gy; y++)
					for (unsigned x = 0; x < gx; x++) {
						blockIdx = {x, y, z};
						emu_call(k, p, std::index_sequence_for<A...>{});
						pthread_barrier_wait(&emu_barrier); // the block's end
					}
		});
	}
	for (auto &t : ts) t.join();
	pthread_barrier_destroy(&emu_barrier);
	return 0;
}
