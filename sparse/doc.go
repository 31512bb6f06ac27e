// Package sparse holds the compressed sparse row (CSR) matrix that every other
// package of hetsgd exchanges: data readers produce it, batches are CSR views
// gathered from it, and the kernels consume it.
//
// Column indices are int32 (the largest feature or label space we target,
// Delicious-200k's 782,585 features, fits with room to spare); row pointers are
// int64 so that a dataset may hold more than 2^31 non-zeros. Values are float32.
// A matrix with a nil Values slice is a pattern matrix: every stored entry is 1.
// Label matrices are stored that way.
package sparse
