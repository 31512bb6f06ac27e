package train

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hetsgd/hetsgd/engine"
	"github.com/hetsgd/hetsgd/internal/atomicfile"
	"github.com/hetsgd/hetsgd/launch"
	"github.com/hetsgd/hetsgd/strategy"
)

// ParseJob reads the command of a launcher's job (hetsgd launch), which
// runs hetsgd train, as train would read its arguments (a config file's
// too), to find its checkpoint folder and log, and refuses at once what
// train would refuse before any work and a restart could not change:
// settings out of range, and a log or folder naming one of the job's
// inputs (the log a restart would set aside). It returns the command with
// the rules that rewrite it for each restart by train's flags.
func ParseJob(command []string) (*launch.Command, error) {
	j := &launch.Command{Args: command, Sub: -1}
	perRank := 0 // devices a rank holds
	for i, a := range command {
		if i > 0 && a == "train" {
			j.Sub = i
			break
		}
	}
	if j.Sub < 0 {
		return nil, fmt.Errorf("the job's command %q runs no hetsgd train", strings.Join(command, " "))
	}
	var f Settings
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(command[j.Sub+1:]); err != nil {
		return nil, fmt.Errorf("the job's train arguments: %v", err)
	}
	j.Switches = map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) {
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			j.Switches[fl.Name] = true
		}
	})
	if f.Config != "" {
		if err := ApplyConfig(fs, f.Config, Visited(fs), strategy.List()); err != nil {
			return nil, err
		}
	}
	in := f.Inputs(nil)
	in.Add("checkpoint being resumed", f.Resume)
	if err := errors.Join(CheckRanges(fs, engine.Ranges), f.CheckOutputs(in)); err != nil {
		return nil, fmt.Errorf("the job's train arguments: %w", err)
	}
	resumed := f.Resume // the folder of the checkpoint it resumes
	if resumed != "" && !atomicfile.IsDir(resumed) {
		resumed = filepath.Dir(resumed)
	}
	switch {
	case f.Checkpoint != "":
		j.Checkpoint = f.Checkpoint
	case f.Resume != "":
		j.Checkpoint = resumed
	default:
		return nil, errors.New("the job has no checkpoint folder to restart from: give its train --checkpoint DIR")
	}
	// Its checkpoint folder's checkpoints are the job's when it resumes one
	// of them, not when it branches off another folder's into it.
	j.Log, j.Resumes = f.Log, resumed != "" && atomicfile.SameFile(resumed, j.Checkpoint)
	perRank = f.DevicesPerRank
	if i, n := launch.RankCount(command[:j.Sub]); i > 0 {
		j.Ranks = i
		if Visited(fs)["devices"] && n > 0 && f.Devices%n == 0 {
			perRank = f.Devices / n
		}
	}
	j.Drop = func(name, value string, resumed, fewer bool) bool {
		switch name {
		case "fault":
			x, err := engine.ParseFault(value)
			return err == nil && x.OnRank // it struck the job that failed
		case "config", "resume":
			return resumed // the checkpoint holds the settings; --resume is added
		case "devices", "devices-per-rank":
			return fewer && resumed // given below, for the ranks left
		}
		return false
	}
	j.Resume = func(dir string, fewer bool) []string {
		if fewer {
			// Each rank left holds as many devices as each did: the run
			// goes on from its model on fewer devices.
			return []string{"--devices-per-rank", strconv.Itoa(perRank), "--resume", dir}
		}
		return []string{"--resume", dir}
	}
	return j, nil
}
