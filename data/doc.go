// Package data reads, generates, describes and batches the datasets hetsgd
// trains on.
//
// Formats: the Extreme Classification Repository text format (ReadXC), plain
// multi-label libSVM (ReadLibSVM) and MNIST idx files (ReadMNIST); any of them
// may be gzip-compressed, which Open detects from the content. A Dataset holds
// a feature CSR (float32 values, int32 ids) and a label CSR (pattern) of the
// same number of rows.
//
// Bad input is reported as a *ParseError naming the file, the line and what is
// wrong; a reader never panics on input and never skips a line silently.
//
// Training reads rows through a Sampler (a seeded permutation, reshuffled at
// every epoch) into a Batch whose buffers are sized once for the largest
// batch, so the training loop does not allocate.
//
// Bibtex ships inside the binary (Bundled) so that hetsgd trains on real data
// with no download; see bundled/PROVENANCE.md.
package data
