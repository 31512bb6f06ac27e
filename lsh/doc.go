// Package lsh holds the locality-sensitive hashing of SLIDE (Chen et al.,
// "SLIDE: In Defense of Smart Algorithms over Hardware Acceleration for
// Large-Scale Deep Learning Systems", MLSys 2020): hash families that put
// vectors of large inner product in the same bucket with high probability,
// tables of those buckets over the rows of a weight matrix, and the
// sampler that turns a query vector into the active set of an output layer
// — the rows worth computing for it.
//
// Two families, as SLIDE ships them:
//
//   - Signed random projections (SRP, SimHash): K·L sparse projections with
//     ±1 entries on a third of the coordinates; a table's bucket is the K
//     sign bits of its K projections.
//   - Densified winner-take-all (DWTA): K·L bins of 8 coordinates drawn from
//     random permutations; a bin's value is the position of its largest
//     non-zero coordinate, and a table's bucket packs K such values of 3 bits
//     each. A bin with no non-zero coordinate borrows the value of another,
//     found by probing with a universal hash (the densification).
//
// Decisions where SLIDE's code and its paper part (each is a choice for the
// intent over the accident):
//
//   - DWTA packs each value in 3 bits, so K = 6 fills the 18 bits of 2^18
//     buckets; the public code shifts by ⌊ln 8⌋ = 2 bits, which overlaps the
//     values and reaches fewer than 10,000 of the 2^18 buckets.
//   - Zero coordinates are absent for DWTA: a ReLU layer's output is half
//     zeros, and a bin of zeros would otherwise always hash to position 0.
//   - A bucket holds at most Capacity rows; when more fall in it, a uniform
//     random subset of Capacity stays (reservoir sampling, seeded). SLIDE's
//     FIFO keeps the last inserted, which favours high row numbers.
//   - Tables are rebuilt whole, rows counted then placed bucket by bucket, so
//     an Index is two flat arrays per table and never more than the rows it
//     holds, instead of 2^18 fixed arrays of 128 per table.
//
// Nothing here allocates after construction: Build reuses its buffers and
// its random stream, and the Sampler's scratch is sized for the rows once.
package lsh
