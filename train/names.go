package train

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/setting"
)

// flagOf names, for the tool's users, the library settings that errors name
// by their Go fields (see package setting): the flag of train that sets the
// field (its declaration's field, Decls), else a phrase with the
// flags, where several set it (fieldPhrases), or another command's flag. A
// field in none of them keeps its Go name, which the tests catch
// (TestErrorsNameFlags).
var flagOf = func() map[string]string {
	m := map[string]string{}
	for k, v := range fieldPhrases {
		m[k] = v
	}
	for _, d := range Decls {
		if d.Field != "" {
			m[d.Field] = "--" + d.Name
		}
	}
	return m
}()

// Names are the tool's names of the library fields errors name, by field:
// each setting's (its flag), and phrases for the fields several settings
// set.
func Names() map[string]string { return maps.Clone(flagOf) }

// fieldPhrases name the fields that no one flag of train sets.
var fieldPhrases = map[string]string{
	"engine.Config.Options":       "the strategy's options",
	"engine.Config.Optimizer":     "the optimizer (--optimizer, --momentum, --weight-decay)",
	"engine.Config.Cost":          "the cost model (--cost)",
	"engine.Config.Net":           "the network (--network, --net-*, --inter-*, --groups, --allreduce)",
	"engine.Config.Net.GroupSize": "the devices per node (--devices / --groups)",
	"runlog.CreateLog.overwrite":  "--force",
}

// Message is err's text with the settings it names written as the tool's
// flags — a run's (Decls), else those of more (a library field by the
// flag or phrase that names it) — and read as the tool's own: without the
// prefixes the packages it passed through put before it ("engine: ",
// "data: "). The libraries keep their prefixes, as Go's convention has it,
// for their Go callers, whose messages say which package failed; the tool
// says its command's name instead ("hetsgd train: "), and a package's name
// means nothing to its users.
//
// A prefix is known by where it stands: one begins the message (or a line
// of it), and one begins each error wrapped inside err. So a word that only
// looks like one — a folder named model in "trained: model: not a
// checkpoint folder", a file named train in "data: train: no points" — is
// kept: no error wrapped inside begins with it.
func Message(err error, more map[string]string) string {
	return stripPrefixes(setting.Rename(err, func(field string) string {
		if n, ok := flagOf[field]; ok {
			return n
		}
		return more[field]
	}), wrappedPrefixes(err))
}

// StripPrefixes drops from msg every prefix that names one of the
// module's packages: at the start of the message, of a line, or after
// another's ": " or "; ". Given a message alone it cannot tell a prefix from
// a name that looks like one (Message can).
func StripPrefixes(msg string) string { return stripPrefixes(msg, nil) }

// stripPrefixes drops the packages' prefixes from msg: the first of those
// that begin the message, a line or a part after "; "; and, where wrapped
// (nil: every package's) says an error wrapped inside begins with one, that
// one wherever it follows ": " or another prefix.
func stripPrefixes(msg string, wrapped map[string]bool) string {
	var b strings.Builder
	at := 0 // msg[:at] is written
	for _, m := range packagePrefix.FindAllStringSubmatchIndex(msg, -1) {
		sep, chain := msg[m[2]:m[3]], msg[m[3]:m[1]] // what came before, and the prefixes
		b.WriteString(msg[at:m[3]])
		first := sep != ": " // a message's, a line's or a part's own
		for chain != "" {
			name, rest, _ := strings.Cut(chain, ": ")
			if !(first || wrapped == nil || wrapped[name]) {
				break
			}
			first, chain = false, rest
		}
		b.WriteString(chain)
		at = m[1]
	}
	b.WriteString(msg[at:])
	return b.String()
}

// wrappedPrefixes returns the packages whose prefixes begin the errors
// wrapped inside err (not err's own).
func wrappedPrefixes(err error) map[string]bool {
	out := map[string]bool{}
	var walk func(e error, root bool)
	walk = func(e error, root bool) {
		if e == nil {
			return
		}
		if name, _, ok := strings.Cut(e.Error(), ": "); ok && !root && slices.Contains(packages, name) {
			out[name] = true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), false)
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c, false)
			}
		}
	}
	walk(err, true)
	return out
}

// packages are the names of the module's packages, whose errors begin
// with them (TestPackagesListed keeps the list whole).
var packages = []string{
	"adacons", "adaptive", "asynclocal", "atomicfile", "bounded", "checkpoint", "comm", "commtest", "cost",
	"crossbow", "cuda", "cudatest", "dashboard", "data", "diloco", "elastic", "engine", "enginetest", "gpu", "kernel", "launch", "lsh",
	"memory", "metric", "model", "mpi", "mpirun", "openblas", "optim", "progress", "ps", "race", "report",
	"repro", "runlog", "serve", "setting", "sparse", "stage", "standin", "strategy", "strategytest", "syncsgd", "tfidf", "timing", "train",
	"trained", "tune", "workload",
}

// packagePrefix matches the packages' prefixes where they may begin a
// message: at its start, a line's, or after ": " or "; " (group 1, kept),
// a chain of them.
var packagePrefix = regexp.MustCompile(`(^|\n|: |; )(?:(?:` + strings.Join(packages, "|") + `): )+`)

// FlagValueMessage rewrites the flag package's `invalid value "V" for flag
// -NAME: WHY` as the tool's own messages read: `--NAME V: WHY`, or WHY
// alone when it names the flag already.
func FlagValueMessage(msg string) string {
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	i := strings.Index(rest, " for flag -")
	if i < 0 {
		return msg
	}
	value := rest[:i]
	name, why, ok := strings.Cut(rest[i+len(" for flag -"):], ": ")
	if !ok {
		return msg
	}
	if strings.Contains(why, "--"+name) {
		return why
	}
	if v, err := strconv.Unquote(value); err == nil {
		value = v
	}
	switch why { // the flag package's words for numbers and booleans
	case "parse error":
		why = "not a value it takes (a number; a whole one ≥ 0 for a seed or a count; true or false for a switch)"
	case "value out of range":
		why = "out of the range of its type"
	}
	return fmt.Sprintf("--%s %s: %s", name, value, why)
}
