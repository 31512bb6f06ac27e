package runlog_test

import (
	"fmt"
	"os"

	"github.com/hetsgd/hetsgd/runlog"
)

// A run's settings as a config file: a strategy's options under its name,
// lists in flow style, and a string that YAML would read as a bool quoted.
func ExampleSettings_WriteYAML() {
	s := runlog.Settings{
		{Name: "strategy", Value: "adaptive"},
		{Name: "hidden", Value: []int{128, 64}},
		{Name: "lr", Value: 0.006},
		{Name: "progress", Value: "off"},
		{Name: "adaptive", Value: runlog.Settings{{Name: "gamma", Value: 0.25}}},
	}
	s.WriteYAML(os.Stdout, "Settings of a run")
	// Output:
	// # Settings of a run
	// strategy: adaptive
	// hidden: [128, 64]
	// lr: 0.006
	// progress: "off"
	// adaptive:
	//   gamma: 0.25
}

// Two logs of one file name in two folders keep their paths; another is
// named by its file alone.
func ExampleFileNames() {
	fmt.Println(runlog.FileNames([]string{"adaptive/run.jsonl", "sync/run.jsonl", "runs/gem.jsonl"}))
	// Output:
	// [adaptive/run.jsonl sync/run.jsonl gem.jsonl]
}
