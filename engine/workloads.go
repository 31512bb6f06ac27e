package engine

import "github.com/hetsgd/hetsgd/workload"

// The engine runs any workload.Workload: these are the interfaces of
// package workload it uses, under its own names for its code's brevity.
// The workloads themselves (the XML MLP, the regression) live in package
// workload, and the engine knows none of them.
type (
	Workload         = workload.Workload
	Worker           = workload.Worker
	Shape            = workload.Shape
	ContextEvaluator = workload.ContextEvaluator
	RandomStater     = workload.RandomStater
	PolledLoader     = workload.PolledLoader
	Stepper          = workload.Stepper
	LazyApplier      = workload.LazyApplier
	Closer           = workload.Closer
	Accountant       = workload.Accountant
	LineSearcher     = workload.LineSearcher
	Sizer            = workload.Sizer
	ZeroKeeper       = workload.ZeroKeeper
)
