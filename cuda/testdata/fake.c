/* A stand-in for NVIDIA's libraries, for the tests of package cuda on a
 * machine without them: the entry points Probe calls, answering as the
 * macros say. FAKE_INIT is cuInit's result, FAKE_DEVICES the GPUs. */
#include <stdio.h>
#include <string.h>

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
	*s = code == 999 ? "CUDA_ERROR_UNKNOWN: an unknown internal error" : "some error";
	return 0;
}
int nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 0; return 0; }
int cublasCreate_v2(void **h) { return 0; }
