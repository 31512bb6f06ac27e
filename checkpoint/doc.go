// Package checkpoint reads and writes checkpoint files — a training run's
// state, saved so that the run can go on after its process ended — and
// keeps a folder of them.
//
// A file is a list of named sections, each either bytes (a strategy's
// snapshot, the engine's books, the caller's settings) or a vector of
// float32 (a replica, an optimizer's moments), followed by a footer with a
// checksum of everything before it:
//
//	header   "HSGDCKPT" (8 bytes), version (uint32), 0 (uint32)
//	section  name length (uint16), name, kind (uint8: 0 bytes, 1 float32),
//	         payload length in bytes (uint64), payload
//	…
//	footer   number of sections (uint64), CRC-32C (Castagnoli) of every
//	         byte before the footer (uint32), "HSGDEND." (8 bytes)
//
// Integers and floats are little-endian. Vectors stream to and from the
// file in chunks, so saving or loading a model needs no second copy of it.
//
// Files are written atomically (a temporary file, fsync, rename, fsync of
// the folder): a process killed at any moment, even while it writes one,
// leaves every earlier checkpoint whole. Open checks the version and the
// checksum before anything is read, so a checkpoint of another version, a
// truncated one or one with a flipped bit is an error naming the file, never
// a run that goes on from garbage; FiniteFloat32s also refuses a vector
// holding a NaN or an infinity, which no run saves.
//
// A folder (Dir) holds one run's checkpoints, named by their sample counts,
// the model of the run's best evaluation (best.hck), and the record of the
// run it belongs to (run.json, Owner): Claim makes a folder a run's before
// the run does any work, refusing a folder of another run's checkpoints, one
// another process holds (a lock that ends with its process), or one that
// cannot be written, and tells a copy of a folder from the folder itself.
package checkpoint
