/* Stand-ins for NVIDIA's libraries, for the tests of package cuda on a
 * machine without them. Built once per library: FAKE_DRIVER gives
 * libcuda's entry points, FAKE_NVRTC NVRTC's, FAKE_CUBLAS cuBLAS's.
 *
 * Probe's part answers as macros say: FAKE_INIT is cuInit's result,
 * FAKE_DEVICES the number of GPUs.
 *
 * The rest is an emulator, enough to run the backend's host side and its
 * kernels on a CPU: device memory is host memory; a context is current
 * on the thread that set it, and the calls that need one fail without it
 * (as the driver does: 201, CUDA_ERROR_INVALID_CONTEXT); NVRTC compiles a
 * program's CUDA C with g++ against emu.h (EMU_H, its path) into a
 * shared object, whose path is the "PTX"; a module is that object loaded,
 * and a launch runs a block's threads as fibers on the calling thread (emu.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FAKE_DRIVER
#ifndef FAKE_INIT
#define FAKE_INIT 0
#endif
#ifndef FAKE_DEVICES
#define FAKE_DEVICES 2
#endif

int cuInit(unsigned flags) { return FAKE_INIT; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { *n = FAKE_DEVICES; return 0; }
int cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal < FAKE_DEVICES ? 0 : 101; }
int cuDeviceGetName(char *name, int len, int dev) { snprintf(name, len, "Fake GPU %d", dev); return 0; }
int cuDeviceTotalMem_v2(unsigned long long *bytes, int dev) { *bytes = (unsigned long long)(dev + 1) << 34; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) {
	switch (attr) {
	case 16: *v = 132 - 10 * dev; return 0;
	case 75: *v = 9; return 0;
	case 76: *v = 0; return 0;
	}
	return 1;
}
int cuGetErrorString(int code, const char **s) {
	switch (code) {
	case 999: *s = "CUDA_ERROR_UNKNOWN: an unknown internal error"; break;
	case 201: *s = "invalid device context"; break;
	case 2: *s = "out of memory"; break;
	default: *s = "some error";
	}
	return 0;
}

static __thread void *current; /* the calling thread's context */
static int primary[16];
#define NEED_CONTEXT \
	if (!current) return 201

int cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = &primary[dev]; return 0; }
int cuDevicePrimaryCtxRelease_v2(int dev) { return 0; }
int cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
int cuCtxSynchronize(void) { NEED_CONTEXT; return 0; }

/* FAKE_MEMORY caps an allocation, to test running out. */
int cuMemAlloc_v2(unsigned long long *p, size_t n) {
	NEED_CONTEXT;
#ifdef FAKE_MEMORY
	if (n > FAKE_MEMORY) return 2;
#endif
	void *m = malloc(n ? n : 1);
	if (!m) return 2;
	*p = (unsigned long long)(uintptr_t)m;
	return 0;
}
int cuMemGetInfo_v2(size_t *free, size_t *total) {
	NEED_CONTEXT;
	*total = (size_t)16 << 30;
#ifdef FAKE_MEMORY
	*free = FAKE_MEMORY;
#else
	*free = (size_t)15 << 30;
#endif
	return 0;
}
int cuMemFree_v2(unsigned long long p) { NEED_CONTEXT; free((void *)(uintptr_t)p); return 0; }
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) { NEED_CONTEXT; memcpy((void *)(uintptr_t)dst, src, n); return 0; }
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n) { NEED_CONTEXT; memcpy(dst, (void *)(uintptr_t)src, n); return 0; }
int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t n) { NEED_CONTEXT; memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n); return 0; }
int cuMemsetD32_v2(unsigned long long dst, unsigned v, size_t n) {
	NEED_CONTEXT;
	for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)dst)[i] = v;
	return 0;
}

/* A module's image is "EMU:" and the path of the object NVRTC built. */
int cuModuleLoadData(void **m, const void *image) {
	NEED_CONTEXT;
	const char *s = image;
	if (strncmp(s, "EMU:", 4) != 0) return 200;
	void *h = dlopen(s + 4, RTLD_NOW | RTLD_LOCAL);
	if (!h) return 200;
	*m = h;
	/* Loaded, the object and its folder can go. */
	unlink(s + 4);
	char dir[300];
	snprintf(dir, sizeof dir, "%s", s + 4);
	char *slash = strrchr(dir, '/');
	if (slash) *slash = 0, rmdir(dir);
	return 0;
}
int cuModuleUnload(void *m) { NEED_CONTEXT; dlclose(m); return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
	NEED_CONTEXT;
	char sym[300];
	snprintf(sym, sizeof sym, "emu_%s", name);
	void *p = dlsym(m, sym);
	if (!p) return 500;
	*f = p;
	return 0;
}
typedef int (*emu_kernel)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void **);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **params, void **extra) {
	NEED_CONTEXT;
	if (bx * by * bz == 0 || bx * by * bz > 1024 || gx * gy * gz == 0) return 1;
	return ((emu_kernel)f)(gx, gy, gz, bx, by, bz, params);
}
#endif

#ifdef FAKE_NVRTC
#ifndef EMU_H
#define EMU_H "emu.h"
#endif
int nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 0; return 0; }

typedef struct {
	char *src, *ptx, *log;
} program;

int nvrtcCreateProgram(program **p, const char *src, const char *name, int nh, const char *const *h, const char *const *in) {
	*p = calloc(1, sizeof(program));
	(*p)->src = strdup(src);
	return 0;
}
int nvrtcDestroyProgram(program **p) {
	free((*p)->src);
	free((*p)->ptx);
	free((*p)->log);
	free(*p);
	*p = NULL;
	return 0;
}
const char *nvrtcGetErrorString(int r) { return r == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR"; }

/* Appends to f a launcher emu_NAME for each __global__ function NAME,
 * telling emu_launch whether the kernel's body calls __syncthreads (the
 * kernels call no device function that does): a kernel that does not
 * runs its threads one after another, without fibers. */
static void launchers(FILE *f, const char *src) {
	for (const char *s = src; (s = strstr(s, "__global__")) != NULL;) {
		s += strlen("__global__");
		while (isspace(*s)) s++;
		if (strncmp(s, "void", 4) != 0) continue;
		s += 4;
		while (isspace(*s)) s++;
		const char *e = s;
		while (isalnum(*e) || *e == '_') e++;
		const char *body = strchr(e, '{'), *end = body;
		for (int depth = 0; end && *end; end++) {
			if (*end == '{') depth++;
			if (*end == '}' && --depth == 0) break;
		}
		int sync = 0;
		for (const char *b = body; b && b < end && (b = strstr(b, "__syncthreads")) != NULL && b < end; b++) sync = 1;
		fprintf(f, "\nextern \"C\" int emu_%.*s(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void **p) "
		           "{ return emu_launch(%.*s, %d, gx, gy, gz, bx, by, bz, p); }\n",
		        (int)(e - s), s, (int)(e - s), s, sync);
		s = e;
	}
}

int nvrtcCompileProgram(program *p, int nopt, const char *const *opts) {
	char dir[] = "/tmp/hetsgd-emu-XXXXXX";
	if (!mkdtemp(dir)) return 1;
	char src[300], obj[300], cmd[1200];
	snprintf(src, sizeof src, "%s/k.cpp", dir);
	snprintf(obj, sizeof obj, "%s/k.so", dir);
	FILE *f = fopen(src, "w");
	if (!f) return 1;
	fputs(p->src, f);
	launchers(f, p->src);
	fclose(f);
	snprintf(cmd, sizeof cmd, "g++ -std=c++17 -O1 -shared -fPIC -pthread -w -include %s -o %s %s 2>&1", EMU_H, obj, src);
	FILE *c = popen(cmd, "r");
	if (!c) return 1;
	size_t n = 0, cap = 4096;
	p->log = calloc(cap, 1);
	for (size_t r; (r = fread(p->log + n, 1, cap - n - 1, c)) > 0;) {
		n += r;
		if (n + 1 == cap) p->log = realloc(p->log, cap *= 2);
	}
	p->log[n] = 0;
	int status = pclose(c);
	unlink(src);
	if (status != 0) {
		rmdir(dir);
		return 6;
	}
	p->ptx = malloc(strlen(obj) + 5);
	sprintf(p->ptx, "EMU:%s", obj);
	return 0;
}
int nvrtcGetPTXSize(program *p, size_t *n) { *n = strlen(p->ptx) + 1; return 0; }
int nvrtcGetPTX(program *p, char *ptx) { strcpy(ptx, p->ptx); return 0; }
int nvrtcGetProgramLogSize(program *p, size_t *n) { *n = strlen(p->log ? p->log : "") + 1; return 0; }
int nvrtcGetProgramLog(program *p, char *log) { strcpy(log, p->log ? p->log : ""); return 0; }
#endif

#ifdef FAKE_CUBLAS
/* cuBLAS works in the calling thread's context: the stand-in driver's at
 * FAKE_DRIVER_PATH (found through its handle: another stand-in driver
 * loaded earlier would answer a plain lookup); without it, no check. */
static int have_context(void) {
#ifdef FAKE_DRIVER_PATH
	static int (*get)(void **);
	if (!get) {
		void *h = dlopen(FAKE_DRIVER_PATH, RTLD_NOW | RTLD_NOLOAD);
		if (!h || !(get = (int (*)(void **))dlsym(h, "cuCtxGetCurrent"))) return 0;
	}
	void *ctx = NULL;
	get(&ctx);
	return ctx != NULL;
#else
	return 1;
#endif
}

int cublasCreate_v2(void **h) {
	if (!have_context()) return 1;
	*h = malloc(1);
	return 0;
}
int cublasDestroy_v2(void *h) { free(h); return 0; }
int cublasSetMathMode(void *h, int mode) { return mode == 0 || mode == 3 ? 0 : 7; }

/* C = alpha·op(A)·op(B) + beta·C, column-major, as cuBLAS. */
int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                   const float *b, int ldb, const float *beta, float *c, int ldc) {
	if (!have_context()) return 1;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int p = 0; p < k; p++) {
				float x = ta ? a[p + i * lda] : a[i + p * lda];
				float y = tb ? b[j + p * ldb] : b[p + j * ldb];
				s += (double)x * y;
			}
			float *z = &c[i + j * ldc];
			*z = (float)(*alpha * s + (*beta == 0 ? 0 : *beta * *z));
		}
	return 0;
}
#endif
