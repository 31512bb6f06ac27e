// Package hugepage allocates the large float32 vectors of a run — a
// replica's parameters and gradient, an optimizer's moments — and asks the
// kernel to back them with transparent huge pages (2 MiB on amd64).
//
// A sampled output layer reads and updates a few thousand scattered rows
// of each of those vectors every batch: with 4 KiB pages nearly every row
// is a TLB miss and a page walk, and such rows, not the arithmetic, bound
// the lazy update. Where the system's transparent huge pages are in
// "madvise" mode (a common default), memory is only backed by huge pages
// when asked, which Floats does; in "always" mode it changes nothing, and
// in "never" mode, or where the call fails, the vector is an ordinary
// slice. The advice is a hint: it changes no value the program computes.
package hugepage
