package repro

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/report"
)

// Studies are the studies Run runs, in the order it runs them: the papers'
// (Adaptive SGD, Layered SGD, GEM, AdaCons), every strategy at its defaults
// on unequal devices, and Adaptive SGD's large experiments at full scale.
var Studies = []string{"adaptive", "lsgd", "gem", "adacons", "heterogeneity", "paper"}

// Inputs are the data the studies run on.
type Inputs struct {
	// Sets are the adaptive and heterogeneity studies' (LoadSet).
	Sets []Set
	// Delicious is the Layered SGD and AdaCons studies' (nil: they skip
	// their Delicious sections).
	Delicious *Set
	// MNIST is the GEM study's, which needs it.
	MNIST *Set
	// Paper are the paper study's: the stand-ins of the papers' sets at
	// full scale (PaperSetNames), which it needs.
	Paper []Set
}

// Run runs the studies named (of Studies) into rep, in the order of
// Studies, on in's data. A study checks ctx only at its runs' events, so
// Run checks it before each: one stopped before it starts writes nothing.
// Run leaves rep open: its caller closes it, or aborts it on an error.
func Run(ctx context.Context, rep *report.Dir, studies []string, in Inputs, opt Options) error {
	for _, s := range studies {
		if !slices.Contains(Studies, s) {
			return fmt.Errorf("repro: unknown study %q", s)
		}
	}
	if slices.Contains(studies, "gem") && in.MNIST == nil {
		return errors.New("repro: the GEM study needs MNIST")
	}
	if slices.Contains(studies, "paper") && len(in.Paper) == 0 {
		return errors.New("repro: the paper study needs a stand-in of a paper's set (" + strings.Join(PaperSetNames(), ", ") + ")")
	}
	run := map[string]func() error{
		"adaptive":      func() error { return AdaptiveSGD(ctx, rep, in.Sets, opt) },
		"lsgd":          func() error { return LayeredSGD(ctx, rep, in.Delicious, opt) },
		"gem":           func() error { return GEM(ctx, rep, *in.MNIST, opt) },
		"adacons":       func() error { return AdaCons(ctx, rep, in.Delicious, opt) },
		"heterogeneity": func() error { return Heterogeneity(ctx, rep, in.Sets, opt) },
		"paper":         func() error { return Paper(ctx, rep, in.Paper, opt) },
	}
	for _, name := range Studies {
		if !slices.Contains(studies, name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped before the %s study: %w", name, err)
		}
		if err := run[name](); err != nil {
			return err
		}
	}
	return nil
}
