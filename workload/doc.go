// Package workload holds what the devices train: the interface an engine
// runs (Workload, and the Worker each device computes its batches with)
// and the workloads themselves — XML, the sparse MLP on an extreme
// multi-label data set with a dense or a sampled (SLIDE's) output layer,
// scored by P@k, and Regression, the stochastic linear regression of the
// aggregation paper's §4.1, with its line search. An engine knows a
// workload only through these interfaces and the optional ones
// (ContextEvaluator, Stepper, LineSearcher, Sizer, Describer,
// SampledOutput, LossScored); a new model is a type that implements them.
//
// TimeStep times one training step of the sparse MLP at a data set's shape
// and sets it against the step's roofline at this machine's SGEMM peak
// (`hetsgd step`).
package workload
