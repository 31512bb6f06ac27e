// Package bounded reads files and lines with a limit, so that no input —
// a file without line breaks, /dev/zero, a log of gigabytes given where a
// config file belongs — makes a reader grow without bound: past the limit
// a read stops with an error that names the file, the line and the limit.
//
// ReadFile reads a small file whole (a config file, a cost model). Lines
// yields a file's lines one at a time, each at most a given length; its
// slices are valid until the next call, so reading a large file allocates
// only for lines longer than the reader's buffer.
package bounded
