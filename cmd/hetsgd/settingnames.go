package main

import (
	"regexp"
	"strings"

	"github.com/hetsgd/hetsgd/setting"
)

// flagOf names, for the tool's users, the library settings that errors name
// by their Go fields (see package setting): mostly a flag, where the field
// is set from one flag; a phrase with the flags, where from several. A field
// not here keeps its Go name, which the tests catch (TestErrorsNameFlags).
var flagOf = map[string]string{
	"engine.Config.Strategy":              "--strategy",
	"engine.Config.Devices":               "--devices",
	"engine.Config.Batch":                 "--batch",
	"engine.Config.LR":                    "--lr",
	"engine.Config.Options":               "the strategy's options",
	"engine.Config.Optimizer":             "the optimizer (--optimizer, --momentum, --weight-decay)",
	"engine.Config.Optimizer.Name":        "--optimizer",
	"engine.Config.Optimizer.Momentum":    "--momentum",
	"engine.Config.Optimizer.WeightDecay": "--weight-decay",
	"engine.Config.Paper":                 "--paper",
	"engine.Config.Speeds":                "--speeds",
	"engine.Config.Clock":                 "--time",
	"engine.Config.Faults":                "--fault",
	"engine.Config.Epochs":                "--epochs",
	"engine.Config.TimeBudget":            "--time-budget",
	"engine.Config.EvalEvery":             "--eval-every",
	"engine.Config.Seed":                  "--seed",
	"engine.Config.LineSearch":            "--line-search",
	"engine.Config.Prep":                  "--prep",
	"engine.Config.Cost":                  "the cost model (--cost)",
	"engine.Config.Net":                   "the network (--network, --net-*, --inter-*, --groups, --allreduce)",
	"engine.Config.Net.GroupSize":         "the devices per node (--devices / --groups)",
	"engine.Config.Net.Intra.Latency":     "--net-latency",
	"engine.Config.Net.Intra.Bandwidth":   "--net-bandwidth",
	"engine.Config.Net.Inter.Latency":     "--inter-latency",
	"engine.Config.Net.Inter.Bandwidth":   "--inter-bandwidth",
	"engine.Config.Noise":                 "--noise",
	"engine.Config.TimingOnly":            "--timing-only",
	"engine.Config.Checkpoint":            "--checkpoint",
	"engine.Config.Checkpoint.Every":      "--checkpoint-every",
	"engine.Config.Checkpoint.Keep":       "--checkpoint-keep",
	"engine.Config.Resume":                "--resume",
	"engine.Config.Patience":              "--patience",
	"engine.NewXML.dropout":               "--dropout",
	"engine.Sampling.Hash":                "--lsh-hash",
	"engine.Sampling.K":                   "--lsh-k",
	"engine.Sampling.L":                   "--lsh-l",
	"engine.Sampling.Capacity":            "--lsh-capacity",
	"engine.Sampling.Active":              "--lsh-active",
	"engine.Sampling.Fill":                "--lsh-fill",
	"engine.Sampling.Update":              "--lsh-update",
	"engine.Sampling.Rehash":              "--lsh-rehash",
	"engine.Sampling.Rebuild":             "--lsh-rebuild",
	"engine.Sampling.Growth":              "--lsh-growth",
	"model.Config.Hidden":                 "--hidden",
	"tune.Grid.Strategies":                "--strategies",
	"tune.Grid.LRs":                       "--lrs",
	"tune.Grid.Batches":                   "--batches",
	"tune.Grid.Seeds":                     "--seeds",
	"data.GenerateDirContext.overwrite":   "--force",
	"report.Create.overwrite":             "--force",
	"runlog.CreateLog.overwrite":          "--force",
	"runlog.AppendLog.path":               "--log",
}

// message is err's text with the settings it names written as the tool's
// flags, tidied for people: a package's prefix repeated by the layers an
// error passed through ("data: data: ") is said once.
func message(err error) string {
	return dedupPrefixes(setting.Rename(err, func(field string) string { return flagOf[field] }))
}

// dedupPrefixes says once a word-and-colon said twice in a row: "tune:
// tune: x" is "tune: x".
func dedupPrefixes(msg string) string {
	var b strings.Builder
	prev := ""
	for msg != "" {
		m := prefixWord.FindStringIndex(msg)
		if m == nil || m[0] != 0 {
			// Copy up to the next word start and go on from there.
			next := len(msg)
			if m != nil {
				next = m[0]
			}
			b.WriteString(msg[:next])
			msg, prev = msg[next:], ""
			continue
		}
		word := msg[:m[1]]
		if word != prev {
			b.WriteString(word)
		}
		msg, prev = msg[m[1]:], word
	}
	return b.String()
}

// prefixWord is a package-like prefix: a lower-case word, a colon and a
// space, at a word's start.
var prefixWord = regexp.MustCompile(`(?:^|\b)[a-z][a-z0-9]*: `)
