// Package train runs single-device training: draw a batch, compute the
// gradient, update the replica, and evaluate on a schedule, writing the run
// log. Training time is measured around the training steps only: data
// loading and evaluation are excluded, as in the papers.
package train
