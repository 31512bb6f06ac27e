// Package gpu trains the MLP on an NVIDIA GPU: Net is a replica whose
// parameters, gradient, activations and batches live in device memory,
// with model.Workspace's step as CUDA C kernels (kernels.cu, compiled by
// NVRTC when a GPU first needs them) and cuBLAS products, through package
// cuda. It is built with -tags cuda, like package cuda's runtime.
//
// The arithmetic follows the host's: the same products in the same
// layouts, the softmax cross-entropy against labels that share the target
// equally, the first layer's weight gradient on the batch's features only
// (plain SGD then updates those rows alone). Reductions run in a fixed
// order and the first layer's gradient is gathered by feature, not
// scattered with atomics, so a step on one GPU gives the same bits every
// time; they differ from the host's in rounding, which the tests bound.
package gpu
