// Package metric measures a model: precision and nDCG at 1, 3 and 5, their
// propensity-scored forms, and the test loss over a whole test set
// (Evaluator), and each point's top labels (Predict). The run log that records the measurements is package runlog's;
// a command that prints them writes Scores as a line or a JSON object
// (WriteText, WriteJSON) and predictions as TSV or JSON Lines
// (PredictionWriter).
//
// Conventions, as in the Extreme Classification Repository's tools: P@k is
// the fraction of the k highest-scored labels that are true, averaged over
// all test points (a point without labels scores 0); nDCG@k divides the
// discounted gain of the top k by the best gain possible with the point's
// labels. The loss is the mean cross-entropy over points that have labels.
// PSP@k and PSnDCG@k (Evaluator.SetPropensity, Propensity) weigh each hit
// by its label's inverse propensity and divide the sum over the points by
// the best sum the points' labels allow, as pyxclib's psprecision and
// psndcg do.
package metric
