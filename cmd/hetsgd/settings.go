package main

import "slices"

// A settingDecl says, once, what hetsgd train does with one of its flags
// beyond its type, default and help, which the flag's registration states
// (trainFlags.register), and its range, which engine.Ranges states: the
// library field it sets, whether it is one of the run's settings, whether a
// checkpoint carries it over and whether a resumed run may change it. The
// lists the tool's parts need — what --print-config and the config record
// leave out, what a resume may change, the inputs saved by absolute path,
// the field each error names — are read from the table (trainSettings); a
// flag without a declaration is a bug the tests catch
// (TestEverySettingDeclaredOnce).
type settingDecl struct {
	name string // the flag, and its key in a config file and the run log
	// field is the library field the flag sets, as errors name it (package
	// setting), "" when errors never name it.
	field string
	// notSetting: the flag says where outputs go, how they are shown, or
	// how this invocation behaves, not what the run is: --print-config
	// leaves it out and the config record does not hold it, so that a run
	// repeated from its settings writes the same log. A config file may
	// still give it.
	notSetting bool
	// notSaved: a checkpoint does not carry it over to a resumed run.
	notSaved bool
	// mayChange: a resumed run may give it another value than the run it
	// continues — how long it runs, how often it evaluates and saves, where
	// it writes, how it shows progress, how many threads compute, on how
	// many devices, and where the data is when it moved (the data itself
	// must be the same).
	mayChange bool
	// input: it names an input file, saved by absolute path so that a run
	// resumed from another folder finds it.
	input bool
	// omitUnset: left out of the settings when not given (empty means the
	// bundled data, the built-in models, equal speeds, no faults).
	omitUnset bool
}

// trainSettings declares every flag of hetsgd train but the strategies'
// options (STRATEGY.OPTION, declared by their strategies).
var trainSettings = []settingDecl{
	{name: "train", input: true, omitUnset: true, mayChange: true},
	{name: "test", input: true, omitUnset: true, mayChange: true},
	{name: "data", input: true, omitUnset: true, mayChange: true},
	{name: "format", mayChange: true},
	{name: "cache", mayChange: true},
	{name: "hidden", field: "model.Config.Hidden"},
	{name: "dropout", field: "workload.NewXML.dropout"},
	{name: "output"},
	{name: "lsh-hash", field: "workload.Sampling.Hash"},
	{name: "lsh-k", field: "workload.Sampling.K"},
	{name: "lsh-l", field: "workload.Sampling.L"},
	{name: "lsh-capacity", field: "workload.Sampling.Capacity"},
	{name: "lsh-active", field: "workload.Sampling.Active"},
	{name: "lsh-fill", field: "workload.Sampling.Fill"},
	{name: "lsh-update", field: "workload.Sampling.Update"},
	{name: "lsh-correct"},
	{name: "lsh-rehash", field: "workload.Sampling.Rehash"},
	{name: "lsh-rebuild", field: "workload.Sampling.Rebuild"},
	{name: "lsh-growth", field: "workload.Sampling.Growth"},
	{name: "batch", field: "engine.Config.Batch"},
	{name: "lr", field: "engine.Config.LR"},
	{name: "optimizer", field: "engine.Config.Optimizer.Name"},
	{name: "momentum", field: "engine.Config.Optimizer.Momentum"},
	{name: "weight-decay", field: "engine.Config.Optimizer.WeightDecay"},
	{name: "paper", field: "engine.Config.Paper"},
	{name: "epochs", field: "engine.Config.Epochs", mayChange: true},
	{name: "time-budget", field: "engine.Config.TimeBudget", mayChange: true},
	{name: "eval-every", field: "engine.Config.EvalEvery", mayChange: true},
	{name: "eval-points", mayChange: true},
	{name: "seed", field: "engine.Config.Seed"},
	{name: "threads", mayChange: true},
	{name: "log", field: "runlog.AppendLog.path", notSetting: true, mayChange: true},
	{name: "force", notSetting: true, notSaved: true, mayChange: true},
	{name: "progress", notSetting: true, notSaved: true, mayChange: true},
	{name: "checkpoint", field: "engine.Config.Checkpoint", notSetting: true, mayChange: true},
	{name: "checkpoint-every", field: "engine.Config.Checkpoint.Every", notSetting: true, mayChange: true},
	{name: "checkpoint-keep", field: "engine.Config.Checkpoint.Keep", notSetting: true, mayChange: true},
	{name: "keep-best", notSetting: true, mayChange: true},
	{name: "patience", field: "engine.Config.Patience", mayChange: true},
	{name: "resume", field: "engine.Config.Resume", notSetting: true, notSaved: true, mayChange: true},
	{name: "strategy", field: "engine.Config.Strategy"},
	{name: "devices", field: "engine.Config.Devices", mayChange: true},
	{name: "devices-per-rank", notSetting: true, mayChange: true},
	{name: "speeds", field: "engine.Config.Speeds", omitUnset: true, mayChange: true},
	{name: "fault", field: "engine.Config.Faults", omitUnset: true},
	{name: "time", field: "engine.Config.Clock"},
	{name: "noise", field: "engine.Config.Noise"},
	{name: "cost", input: true, omitUnset: true},
	{name: "network", input: true, omitUnset: true},
	{name: "net-latency", field: "engine.Config.Net.Intra.Latency"},
	{name: "net-bandwidth", field: "engine.Config.Net.Intra.Bandwidth"},
	{name: "inter-latency", field: "engine.Config.Net.Inter.Latency"},
	{name: "inter-bandwidth", field: "engine.Config.Net.Inter.Bandwidth"},
	{name: "topology", notSetting: true},
	{name: "groups"},
	{name: "allreduce"},
	{name: "prep", field: "engine.Config.Prep"},
	{name: "overlap"},
	{name: "timing-only", field: "engine.Config.TimingOnly"},
	{name: "workload"},
	{name: "dim"},
	{name: "line-search", field: "engine.Config.LineSearch"},
	{name: "step-rule"},
	{name: "config", notSetting: true, notSaved: true},
	{name: "print-config", notSetting: true, notSaved: true},
	{name: "dashboard", notSetting: true, notSaved: true, mayChange: true},
}

// declOf returns the declaration of train's flag name; false for a
// strategy's option and an unknown name.
func declOf(name string) (settingDecl, bool) {
	i := slices.IndexFunc(trainSettings, func(d settingDecl) bool { return d.name == name })
	if i < 0 {
		return settingDecl{}, false
	}
	return trainSettings[i], true
}

// declared returns the names of the declarations for which is holds.
func declared(is func(settingDecl) bool) []string {
	var out []string
	for _, d := range trainSettings {
		if is(d) {
			out = append(out, d.name)
		}
	}
	return out
}

var (
	notSettings    = declared(func(d settingDecl) bool { return d.notSetting })
	mayChange      = declared(func(d settingDecl) bool { return d.mayChange })
	notSaved       = declared(func(d settingDecl) bool { return d.notSaved })
	inputPathFlags = declared(func(d settingDecl) bool { return d.input })
	omitUnset      = declared(func(d settingDecl) bool { return d.omitUnset })
)
