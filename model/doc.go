// Package model is the sparse-input multi-layer perceptron of hetsgd: sparse
// input (D features) → hidden layers with ReLU → L outputs with softmax and
// cross-entropy against uniform targets over each point's labels.
//
// All parameters of a replica live in one flat float32 vector, laid out layer
// by layer as [W₀ b₀ W₁ b₁ …]; Wₗ is in×out row-major, so row j of W₀ holds
// the hidden weights of input feature j. Merging, all-reduce, optimizers and
// checkpoints all work on that vector. The gradient has the same layout.
//
// An MLP is an immutable description (shapes and offsets). The buffers of one
// forward/backward pass live in a Workspace, sized once for the largest batch
// it will see, so Forward, Gradient and Step do not allocate. A Workspace
// belongs to one goroutine; the kernels it calls run on package kernel's
// default pool (every core unless kernel.SetThreads says otherwise).
package model
