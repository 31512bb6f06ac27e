package train

import (
	"maps"
	"regexp"
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
// flag or phrase that names it) — tidied for people: a package's prefix
// repeated by the layers an error passed through ("data: data: ") is said
// once.
func Message(err error, more map[string]string) string {
	return dedupPrefixes(setting.Rename(err, func(field string) string {
		if n, ok := flagOf[field]; ok {
			return n
		}
		return more[field]
	}))
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
