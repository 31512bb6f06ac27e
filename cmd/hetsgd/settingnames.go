package main

import "github.com/hetsgd/hetsgd/train"

// otherPhrases name the library fields that other commands' flags set;
// train's are the run's declarations' (train.Message).
var otherPhrases = map[string]string{
	"tune.Grid.Strategies":              "--strategies",
	"tune.Grid.LRs":                     "--lrs",
	"tune.Grid.Batches":                 "--batches",
	"tune.Grid.Seeds":                   "--seeds",
	"data.GenerateDirContext.overwrite": "--force",
	"report.Create.overwrite":           "--force",
}

// message is err's text with the settings it names written as the tool's
// flags, tidied for people (train.Message).
func message(err error) string { return train.Message(err, otherPhrases) }
