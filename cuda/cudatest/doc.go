// Package cudatest gives tests a GPU: the real one, or an emulator.
//
// A test package's TestMain calls Main; a test calls GPU for a device.
// By default the device is the emulator of package cuda's stand-in
// libraries (cuda/testdata/fake.c, built with gcc; g++ compiles the
// kernels), which runs the backend's host side and its CUDA C kernels on
// the CPU, so that they are tested on every machine. With
// HETSGD_GPU_TEST=real the tests run on the machine's GPU 0 instead, found
// as hetsgd finds it (HETSGD_CUDA_DRIVER, HETSGD_CUDA_LIBS), and fail
// where there is none: that is how a GPU machine checks the kernels
// against their references.
package cudatest
