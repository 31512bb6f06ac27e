// Package openblas makes OpenBLAS's SGEMM an implementation of package
// kernel, in builds with the openblas tag (cgo and Debian's libopenblas-dev):
//
//	go build -tags openblas ./cmd/hetsgd
//
// Importing it registers the implementation "openblas", which then runs
// every GEMM of the package — the model's products and the fused output
// layer's blocks — while the vector loops stay the built-in SIMD ones.
// OpenBLAS runs single-threaded: package kernel's worker pool splits every
// product over the threads, exactly as for the built-in micro-kernels, so the
// two share their parallel structure, their conformance tests (go test -tags
// openblas ./kernel) and their benchmarks.
//
// OpenBLAS chooses its kernels when the library loads, from the CPU it
// detects or from OPENBLAS_CORETYPE. It takes its AVX2 (Haswell) kernels on
// AVX-512 CPUs it does not know, such as AMD Zen 4 and 5, at about 60% of the
// speed; on a CPU with AVX-512 the package asks for SkylakeX, which
// the tool sets before restarting itself (kernel.BLASEnv).
package openblas
