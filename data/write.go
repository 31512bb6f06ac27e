package data

import (
	"bufio"
	"fmt"
	"io"
)

// WriteXC writes d in the XC format, as ReadXC reads it: the header "N D
// L", then a line per point, each value with the digits its float32 needs
// to read back exactly (binary rows: 1).
func WriteXC(w io.Writer, d *Dataset) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(bw, "%d %d %d\n", d.Len(), d.Features(), d.Labels())
	var line []byte
	var one []float32
	for i := range d.Len() {
		feats, vals := d.X.Row(i)
		if vals == nil {
			for len(one) < len(feats) {
				one = append(one, 1)
			}
			vals = one[:len(feats)]
		}
		labels, _ := d.Y.Row(i)
		line = appendXCLine(line[:0], labels, feats, vals, 1, -1)
		if len(labels) == 0 && len(feats) == 0 {
			line = append(line[:0], " \n"...) // a point of nothing: not a blank line
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteDir writes train and test into dir as train.txt and test.txt in
// the XC format: both whole, or neither (see GenerateDirWith); existing
// files are refused unless overwrite.
func WriteDir(dir string, train, test *Dataset, overwrite bool) error {
	_, _, err := generateDir(dir, float64(3*(train.Bytes()+test.Bytes())), overwrite, func(trainW, testW io.Writer) (GenStats, GenStats, error) {
		if err := WriteXC(trainW, train); err != nil {
			return GenStats{}, GenStats{}, fmt.Errorf("data: %w", err)
		}
		return GenStats{}, GenStats{}, WriteXC(testW, test)
	})
	return err
}
