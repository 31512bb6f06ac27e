// Package optim holds the local update rules that a device applies to its
// replica's flat parameter vector: plain SGD (the papers' update), SGD with
// momentum, and Adam, each with optional L2 weight decay coupled to the
// gradient as in PyTorch's torch.optim.
//
// An Optimizer owns its state (momentum, moments), sized once for the vector
// it updates; Step does not allocate and splits long vectors over the kernel
// pool in fixed chunks, so results do not depend on the number of cores.
package optim
