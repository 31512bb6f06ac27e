package train

import (
	"flag"
	"fmt"
	"strings"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/metric"
	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/workload"
)

// Ranking holds the flags of approximate top-k, which hetsgd eval and
// serve share: --rank (exact or tables) and the tables' settings.
type Ranking struct {
	Rank     string
	Sampling workload.Sampling
	Seed     uint64
}

// Register registers the flags on fs; more ends --rank's help.
func (r *Ranking) Register(fs *flag.FlagSet, more string) {
	r.Sampling = workload.DefaultSampling()
	fs.StringVar(&r.Rank, "rank", "exact", "exact (every label ranked) or tables (SLIDE's inference: a point's labels ranked among those its hash tables over the output layer retrieve, at most --lsh-active of them"+more+")")
	fs.Uint64Var(&r.Seed, "seed", 1, "--rank tables: seed of the tables' hash functions")
	fs.StringVar(&r.Sampling.Hash, "lsh-hash", r.Sampling.Hash, "--rank tables: hash family, dwta or srp")
	fs.IntVar(&r.Sampling.K, "lsh-k", r.Sampling.K, "--rank tables: hash values per table (`K`; dwta: 3 bits each, srp: 1)")
	fs.IntVar(&r.Sampling.L, "lsh-l", r.Sampling.L, "--rank tables: hash `tables`")
	fs.IntVar(&r.Sampling.Capacity, "lsh-capacity", r.Sampling.Capacity, "--rank tables: `rows` a bucket keeps")
	fs.Float64Var(&r.Sampling.Active, "lsh-active", r.Sampling.Active, "--rank tables: `share` of the labels a point ranks at most, those in the most tables first")
}

// Check refuses a --rank other than exact or tables, and the tables'
// settings given without --rank tables or out of their ranges.
func (r *Ranking) Check(fs *flag.FlagSet) error {
	if r.Rank != "exact" && r.Rank != "tables" {
		return fmt.Errorf("--rank %q: want exact or tables", r.Rank)
	}
	var onlyTables error
	fs.Visit(func(f *flag.Flag) {
		if r.Rank == "exact" && onlyTables == nil && (f.Name == "seed" || strings.HasPrefix(f.Name, "lsh-")) {
			onlyTables = fmt.Errorf("--%s applies with --rank tables only", f.Name)
		}
	})
	if onlyTables != nil {
		return onlyTables
	}
	return CheckRanges(fs, engine.Ranges)
}

// Tables returns the tables of --rank tables for networks of m's shape,
// nil for --rank exact.
func (r *Ranking) Tables(m *model.MLP) (*metric.Tables, error) {
	if r.Rank != "tables" {
		return nil, nil
	}
	t, err := r.Sampling.Tables(m, r.Seed)
	return &t, err
}
