// Package data reads, generates, describes and batches the datasets hetsgd
// trains on. It trains nothing: the stand-in fit, which trains models on
// samples, is package standin.
//
// Formats: the Extreme Classification Repository text format (ReadXC), plain
// multi-label libSVM (ReadLibSVM; LibSVM numbers features from 1, LibSVM0
// from 0, as XC does) and MNIST idx files (ReadMNIST); any of them may be
// gzip-compressed, which Open detects from the content. A Dataset holds
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
// process substitution is read once, as a stream, and never cached; the
// path "-" (Stdin) is the standard input, read so. A
// Loader's Context stops a load within milliseconds (Generate has the same
// through GenerateContext and GenerateDirContext).
//
// Training reads rows through a Sampler (a seeded permutation, reshuffled at
// every epoch) into a Batch whose buffers are sized once for the largest
// batch, so the training loop does not allocate.
//
// # Stand-ins
//
// Generate imitates a Profile (a few published statistics) with labels
// drawn independently from a power law. A StandIn imitates a real set
// more closely, with the structure of extreme-classification data, and
// package standin fits one to a set; data gen --like FILE|DIR writes a stand-in
// of any size. The model, point by point (each from its own seeded
// stream, so a set streams out in O(points) and the same parameters and
// seed give the same bytes):
//
//   - Labels per point and features per point are drawn from the real
//     set's distributions, kept as 129 quantiles: means, spread and tails.
//   - Labels have a frequency rank; the share of points carrying the label
//     of each rank follows the real set's sorted frequency curve, kept as a
//     function of the rank's fraction of the label count so that it
//     rescales to any number of labels. The generator calibrates its label
//     weights by simulation so that distinct draws hit the curve's head,
//     correcting them on −log(1 − share) (Calibration "log-share", what
//     fits write; files written before it keep the first rule, and their
//     bytes). A fit reads the curve off the set's counts, taking
//     Good–Turing's estimate for counts below 5 (the labels on no point
//     share the mass of those seen once; the head keeps its counts), so
//     that a sample too small for its labels, which leaves most of them
//     on no point, keeps its head and the mass of the labels it did not
//     see (the feature curve is read the same way). Bibtex and Delicious
//     have no label or feature on fewer than 5 points, and keep their
//     curves.
//   - Co-occurrence: labels fall in Topics clusters (a seeded round-robin
//     over shuffled ranks, so each holds head and tail labels). A point's
//     first label, and each later one with chance 1 − Concentration, is
//     drawn from all labels; the others from the topics it already has.
//     Within a topic labels keep their weights, so the curve holds.
//   - Features: each label rank and each topic owns a prototype of
//     PrototypeSize features drawn (by a hash, never stored) from the real
//     set's feature-frequency curve. A feature of a point comes with chance
//     Signal from one of its labels' prototypes, otherwise with chance
//     TopicShare from one of its topics' prototypes, otherwise from the
//     feature curve alone: the shared noise of common words.
//   - Vague points: with chance Vague a point takes all its features from
//     the feature curve, none from a prototype or an anchor. They cap
//     how well a model does without slowing how fast it learns the rest;
//     a stand-in with them has a high TopicShare and a low Signal (the
//     speed model, below).
//   - Anchors (when the stand-in has them): a label may have an anchor, a
//     feature of its own drawn from the rarer half of the features, which
//     a point carrying the label holds with the anchor chance of the
//     label's rank (a function of the rank's fraction of the label count,
//     as the label curve is), before its other features. Real sets have
//     such features: two of Bibtex's mark its most frequent label on
//     exactly its points.
//   - Values: 1 when the real set is binary, otherwise positive and scaled
//     to the real set's mean row norm.
//
// A stand-in without anchors or vague points (every stand-in file written
// before they existed) generates the bytes it always did.
//
// Not modelled: near-duplicates. Real sets hold families of points whose
// features overlap by half or more (17 % of Delicious's training points,
// 6 % of Bibtex's); the model draws every point on its own. Summary
// counts them (nearDuplicateShare, by prefix filtering), and the report
// sets the set's share beside the stand-in's.
//
// MeasureStandIn reads counts, quantiles and curves off a set, and
// Anchors its anchors (a feature on at least 50 points, 90 % of them
// carrying one label, is that label's anchor; the chance of a band of
// ranks is the mean share of its labels' points that hold their anchor).
// Topics hold about four times a point's labels; TopicShare is 0.3. The
// knobs the data does not show are fitted by training on a Generator's
// samples, in package standin.
//
// PaperStandIn builds the stand-ins of the papers' large sets
// (amazon-670k, delicious-200k), which cannot be fitted here, from their
// published statistics, choosing in writing what the tables do not give
// (see paperSets); data gen --like amazon-670k writes one. The earlier
// profile generator stays reachable as data gen --like profile:NAME, so
// that figures measured on it reproduce.
//
// Bibtex ships inside the binary (Bundled) so that hetsgd trains on real data
// with no download; see bundled/PROVENANCE.md.
package data
