package tune

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Write writes the summary of grid g's runs as two tables: the mean best
// P@1 of every point of the grid, then both protocols' choices side by side
// with their times to the target, in one write whose error it returns.
func (s Summary) Write(w io.Writer, g Grid) error {
	b := new(bytes.Buffer)
	s.writeGrid(b, g)
	s.writeProtocols(b)
	_, err := w.Write(b.Bytes())
	return err
}

// writeGrid writes the mean best P@1 of every point: a row per strategy
// and batch, a column per rate; empty where the grid has no result.
func (s Summary) writeGrid(w io.Writer, g Grid) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nbest P@1 (mean over %d seed(s)) by learning rate; *: a run diverged (its best before diverging):\n", len(g.Seeds))
	fmt.Fprint(tw, "strategy\tbatch\t")
	for _, lr := range g.LRs {
		fmt.Fprintf(tw, "%s\t", FormatRate(lr))
	}
	fmt.Fprintln(tw)
	at := map[[3]string]Point{}
	for _, p := range s.Points {
		at[[3]string{p.Strategy, strconv.Itoa(p.Batch), strconv.FormatFloat(p.LR, 'g', -1, 64)}] = p
	}
	for _, st := range g.Strategies {
		for _, b := range g.Batches {
			fmt.Fprintf(tw, "%s\t%d\t", st, b)
			for _, lr := range g.LRs {
				p, ok := at[[3]string{st, strconv.Itoa(b), strconv.FormatFloat(lr, 'g', -1, 64)}]
				switch {
				case ok && p.Diverged > 0:
					fmt.Fprintf(tw, "%.4f*\t", p.BestP1)
				case ok:
					fmt.Fprintf(tw, "%.4f\t", p.BestP1)
				default:
					fmt.Fprint(tw, "\t")
				}
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
}

// writeProtocols writes both protocols' choices side by side.
func (s Summary) writeProtocols(w io.Writer) {
	fmt.Fprintf(w, "\ntime to P@1 %.4f in training seconds of the run's clock; — : not reached by every seed\n", s.Target)
	shared := "shared rate: " + s.SharedNote
	if s.SharedNote == "" {
		shared = fmt.Sprintf("shared: lr %s, batch %d", FormatRate(s.SharedLR), s.SharedBatch)
	}
	fmt.Fprintf(w, "%-46s | own best rate and batch\n", shared)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tbest P@1\ttime to target\t|\tlr\tbatch\tbest P@1\tPSP@5 there\ttime to target\t")
	tta := func(p Point) string {
		if !p.Reached {
			return "—"
		}
		return fmt.Sprintf("%.3g", p.TTA)
	}
	for i, own := range s.Own {
		s1, s2 := "", ""
		if i < len(s.Shared) {
			s1, s2 = fmt.Sprintf("%.4f", s.Shared[i].BestP1), tta(s.Shared[i])
		}
		// The rate the runs took: a default one is printed as the number.
		psp := "—" // not measured (the regression workload)
		if own.PSP5 > 0 {
			psp = fmt.Sprintf("%.4f", own.PSP5)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t|\t%g\t%d\t%.4f\t%s\t%s\t\n", own.Strategy, s1, s2, own.EffectiveLR, own.Batch, own.BestP1, psp, tta(own))
	}
	tw.Flush()
}
