//go:build !unix

package atomicfile

import "os"

// alive cannot tell here; temporary files are then removed by age only.
func alive(int) bool { return true }

func syncDir(string) {}

// umask is the usual one where it cannot be read.
const umask = 0o022

// noFollow is not available here: OpenInPlace checks for a link first.
const noFollow = 0

// links cannot tell here.
func links(os.FileInfo) uint64 { return 1 }
