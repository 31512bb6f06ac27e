package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hetsgd/hetsgd/progress/stage"
)

// GenOptions are how a generator writes a dataset folder (GenerateDirWith,
// StandIn.GenerateDirWith).
type GenOptions struct {
	// Overwrite replaces train.txt and test.txt when they exist.
	Overwrite bool
	// Progress is told of each split as its points are written (nil:
	// nothing).
	Progress stage.Reporter
}

// MaxGenBytes bounds the sets a generator writes, whatever the free space:
// sets this large could not be loaded to train on (the loader holds a set
// in memory whole), and a count of points that asks for them is a slip.
const MaxGenBytes = 1 << 40

// genBytes estimates the bytes of a set in the XC format of points points,
// labels and features a point on average among ids of the dimensions
// given, its values valueChars characters each: the ids are written in
// decimal, "l1,l2 f1:v1 f2:v2\n".
func genBytes(points int, labels, features float64, nLabels, nFeatures int, valueChars float64) float64 {
	perPoint := labels*(meanDigits(nLabels)+1) + features*(meanDigits(nFeatures)+2+valueChars) + 1
	return float64(points) * perPoint
}

// meanDigits is the mean number of decimal digits of the ids 0 to n−1.
func meanDigits(n int) float64 {
	if n <= 1 {
		return 1
	}
	var sum float64
	for lo, d := 0, 1; lo < n; lo, d = max(10*lo, 10), d+1 {
		hi := min(n, max(10*lo, 10))
		sum += float64(hi-lo) * float64(d)
	}
	return sum / float64(n)
}

// profileValueChars and standInValueChars are the mean characters of a
// written value: the profile's rows have unit norm ("0.1234"); a stand-in's
// are 1 when binary, as RowNorm 0 makes them.
const profileValueChars = 6

func standInValueChars(s *StandIn) float64 {
	if s.RowNorm == 0 {
		return 1
	}
	return profileValueChars
}

// EstimateBytes estimates the bytes of the training and test sets the
// profile generates.
func (p Profile) EstimateBytes() float64 {
	return genBytes(p.Train+p.Test, p.AvgLabels, p.AvgNNZ, p.Labels, p.Features, profileValueChars)
}

// EstimateBytes estimates the bytes of the training and test sets the
// stand-in generates.
func (s *StandIn) EstimateBytes() float64 {
	return genBytes(s.Train+s.Test, meanQuantile(s.LabelsPerPoint), meanQuantile(s.FeaturesPerPoint), s.Labels, s.Features, standInValueChars(s))
}

// ErrTooLarge is wrapped by the error of a generator asked for sets that
// would not fit on the disk (CheckSpace).
var ErrTooLarge = errors.New("too large to write")

// CheckSpace refuses to write the profile's sets into dir when they would
// not fit (see checkSpace).
func (p Profile) CheckSpace(dir string) error { return checkSpace(dir, p.EstimateBytes()) }

// CheckSpace refuses to write the stand-in's sets into dir when they would
// not fit (see checkSpace).
func (s *StandIn) CheckSpace(dir string) error { return checkSpace(dir, s.EstimateBytes()) }

// checkSpace refuses to write a set of about bytes into dir when they are
// more than the free space of dir's file system (of its nearest folder
// that exists), or more than MaxGenBytes: before any work, rather than a
// full disk at the end. What the check cannot learn (a system that does
// not say its free space) it lets through.
func checkSpace(dir string, bytes float64) error {
	if bytes > MaxGenBytes {
		return fmt.Errorf("data: %w: the sets would take about %s, more than the %s hetsgd writes at most (ask for fewer points)", ErrTooLarge, byteSize(bytes), byteSize(MaxGenBytes))
	}
	at := filepath.Clean(dir)
	for {
		if _, err := os.Stat(at); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		up := filepath.Dir(at)
		if up == at {
			return nil
		}
		at = up
	}
	free, ok := freeBytes(at)
	if ok && bytes > float64(free) {
		return fmt.Errorf("data: %w: the sets would take about %s, and the file system of %s has %s free (ask for fewer points, or write elsewhere)", ErrTooLarge, byteSize(bytes), at, byteSize(float64(free)))
	}
	return nil
}

// byteSize writes a size in bytes for people: 812 MB, 1.1 TB.
func byteSize(b float64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB", "PB"}
	i := 0
	for b >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	if i == 0 || b >= 100 {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
