// Package kernel holds the float32 compute kernels of hetsgd: dense GEMM in
// the three layouts the model needs, CSR×dense products for the sparse first
// layer, the fused softmax–cross-entropy pass, and the vector operations that
// optimizers and strategies apply to flat parameter vectors. The GEMM
// products also run at bf16 precision with float32 sums (UsePrecision;
// bf16.go), on AVX512-BF16 where the CPU has it.
//
// Every kernel has a deliberately plain reference (the *Ref functions, whose
// doc comments state the semantics as a loop) and the fast paths are tested
// against those references on a ladder of sizes.
//
// Parallelism goes through a Pool of long-lived goroutines; kernels split work
// only over independent outputs (rows, column ranges, or a fixed number of
// partial sums reduced in a fixed order), so a result is bitwise identical
// whatever the number of workers. Kernels do not allocate once warm: scratch
// space (GEMM packing buffers, job records) is recycled.
//
// All matrices are row-major. Shapes are the caller's responsibility: a slice
// too short for the stated shape panics with a "kernel:" message.
package kernel

//go:generate sh -c "cd asm && go run . -pkg kernel -out ../simd_amd64.s -stubs ../simd_amd64_stubs.go"
