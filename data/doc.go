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
// Input is untrusted: a line longer than 64 MiB is an error (so /dev/zero or
// a binary file fails, rather than exhausting memory), and no count read
// from a header (points, images, pixels) sizes an allocation beyond what
// the input was seen to hold. Feature and label counts are kept as the
// dataset's dimensions but never allocated from here.
//
// A Loader opens each input once: a regular file is counted and then parsed
// through that one descriptor, and may be cached; a FIFO, /dev/stdin or a
// process substitution is read once, as a stream, and never cached. A
// Loader's Context stops a load within milliseconds (Generate has the same
// through GenerateContext and GenerateDirContext).
//
// Training reads rows through a Sampler (a seeded permutation, reshuffled at
// every epoch) into a Batch whose buffers are sized once for the largest
// batch, so the training loop does not allocate.
//
// Bibtex ships inside the binary (Bundled) so that hetsgd trains on real data
// with no download; see bundled/PROVENANCE.md.
package data
