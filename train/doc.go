// Package train is a training run as hetsgd train configures it, for any
// front end: its settings, each declared once, and the steps from those
// settings to a run the engine can start.
//
// Decls declares every setting — name, help, default, the library field it
// sets, whether it is one of the run's settings, whether a checkpoint
// carries it over and whether a resumed run may change it; its range is
// engine.Ranges'. Everything else reads the declarations: Register makes
// them flags; ApplyConfig reads a config file (YAML, JSON, or a run log's
// config record) onto them, naming the file's line and the nearest
// setting for a mistyped key; Effective is the run's settings as
// --print-config prints them and the run log's config record holds them;
// Resume reads a checkpoint's settings back, refusing a change a resumed
// run may not make; Message renames the library fields an error names
// (package setting) as the settings that set them.
//
// From settings to a run: Settings.EngineConfig builds the engine's
// Config (devices from the ranks of an MPI job, nodes, the network and cost
// models, the strategy's options), rejecting a setting that would do
// nothing where a user would expect it to change the run; BuildWorkload
// loads the data and builds the model; ConfigRecord is the run log's first
// record; Inputs and CheckOutputs make sure no output replaces an input;
// Resumed.Place and Resumed.OpenLog decide where a resumed run writes.
// Run does all of that and runs the job (engine.Prepare, then its Run),
// writing the run log and reporting through a Front: the front end's
// writers, its names for the settings, its progress bar and live view. A
// front end parses its arguments onto a flag set Register filled, and
// hands Run the result.
//
// The path of one setting, --lr, as an example: its declaration in Decls
// makes the flag (Register) and the config-file key; EngineConfig copies
// it into engine.Config.LR; engine.Config.WithDefaults fills in the
// strategy's default when it is not given, scaled to the batch; the engine
// hands it to the strategy and the optimizer.
package train
