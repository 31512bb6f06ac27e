// Package metric measures a model and records a run: precision and nDCG at
// 1, 3 and 5 and the test loss over a whole test set (Evaluator),
// time-to-accuracy over a series of evaluations, and the JSON Lines run log
// (Log) whose schema the README documents.
//
// Conventions, as in the Extreme Classification Repository's tools: P@k is
// the fraction of the k highest-scored labels that are true, averaged over
// all test points (a point without labels scores 0); nDCG@k divides the
// discounted gain of the top k by the best gain possible with the point's
// labels. The loss is the mean cross-entropy over points that have labels.
package metric
