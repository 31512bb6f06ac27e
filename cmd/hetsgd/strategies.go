package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
)

func runStrategies(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("strategies", "strategies [-v]", stderr)
	verbose := fs.Bool("v", false, "list each strategy's options with their defaults")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for _, i := range strategy.List() {
		fmt.Fprintf(stdout, "%-14s %s\n", i.Name, i.Summary)
		if !*verbose {
			continue
		}
		for _, o := range i.Options {
			def := "derived"
			if !math.IsNaN(o.Default) {
				def = strconv.FormatFloat(o.Default, 'g', -1, 64)
			}
			fmt.Fprintf(stdout, "    --%-12s %-8s %s\n", o.Name, def, o.Usage)
		}
	}
	return nil
}
