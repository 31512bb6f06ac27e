package train

import (
	"fmt"
	"maps"
	"regexp"
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
func Message(err error, more map[string]string) string {
	return StripPrefixes(setting.Rename(err, func(field string) string {
		if n, ok := flagOf[field]; ok {
			return n
		}
		return more[field]
	}))
}

// StripPrefixes drops from msg every prefix that names one of the
// module's packages (packages): one at the start of the message, of a line,
// or after another's ": " or "; ".
func StripPrefixes(msg string) string {
	return packagePrefix.ReplaceAllString(msg, "$1")
}

// packages are the names of the module's packages, whose errors begin
// with them (TestPackagesListed keeps the list whole).
var packages = []string{
	"adacons", "adaptive", "asynclocal", "atomicfile", "bounded", "checkpoint", "comm", "commtest", "cost",
	"crossbow", "dashboard", "data", "diloco", "elastic", "engine", "enginetest", "kernel", "launch", "lsh",
	"memory", "metric", "model", "mpi", "mpirun", "openblas", "optim", "progress", "ps", "race", "report",
	"repro", "runlog", "setting", "sparse", "stage", "strategy", "strategytest", "syncsgd", "timing", "train",
	"trained", "tune", "workload",
}

// packagePrefix matches a package's prefix where one begins a message:
// at its start, a line's, or after ": " or "; ". The group keeps what came
// before.
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
