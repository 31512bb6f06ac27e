// Package cuda finds NVIDIA's CUDA libraries when hetsgd runs, without
// cgo: the driver (libcuda.so.1), NVRTC (which compiles CUDA C source, as
// the GPU backend's kernels will be) and cuBLAS (its products), loaded with
// purego (github.com/ebitengine/purego), and the GPUs the driver sees
// (Probe, hetsgd gpus). It is the GPU backend's lower floor: a GPU opened
// (Open) gives device memory (Alloc, CopyIn, CopyOut), CUDA C programs
// compiled by NVRTC on first use and cached (Compile), kernel launches
// (Launch) and cuBLAS's products in row-major terms (Gemm), all run on
// the one OS thread its context is current on (see GPU). The devices that
// run a replica on a GPU, or on a partition of one, are built on it.
//
// Testing without a GPU. cuda/testdata holds stand-ins of the three
// libraries, built with gcc by package cudatest: an emulator in which
// device memory is host memory, NVRTC is g++ with a header that gives
// CUDA C's built-ins (emu.h), and a launch runs a block's threads as
// fibers on the calling thread, in turn from barrier to barrier. The same tests run on a GPU with HETSGD_GPU_TEST=real.
//
// The build tag. The package finds anything only in a binary built with
// -tags cuda; in the default binary Probe returns ErrNotBuilt, which says
// how to build one that has it. Importing purego links a binary against
// the C library's loader (it gets an ELF interpreter), and hetsgd's
// default binary is static: it runs as it is in a scratch container, on
// musl and on machines of another glibc. That trade is worth making once
// the default binary can train on a GPU; until then it buys nothing.
//
// Where the libraries are. HETSGD_CUDA_DRIVER names the driver's file and
// HETSGD_CUDA_LIBS a folder holding libnvrtc and libcublas; a location
// given is the only one looked at, so that a user who names one learns
// when it is wrong. Otherwise the dynamic loader's search (its cache and
// LD_LIBRARY_PATH) is tried, then /usr/local/cuda/lib64 and the
// toolkits under /usr/local (the newest first). Whatever is missing — the
// driver, a library, a GPU — is a *MissingError that names it, the places
// tried, and what to do.
package cuda
