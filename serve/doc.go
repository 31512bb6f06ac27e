// Package serve answers a trained model's predictions over HTTP: the Open
// Inference Protocol's REST form (KServe v2's /v2/health/ready,
// /v2/models/NAME and /v2/models/NAME/infer) that serving stacks speak,
// and a plain POST /predict. hetsgd serve runs it.
//
// A Server scores with one goroutine (Run), which takes every request
// queued when it frees and scores their points together, up to
// Options.MaxBatch a pass: a lone request waits for no other, and under
// load the passes fill. Requests are bounded (bytes, points, labels) and
// checked against the model before they queue; what a request gets wrong
// is a 4xx answer that says what, never a 5xx. Swap replaces the model
// while it serves (Follow reloads it when a run writes a newer
// checkpoint); requests already checked are scored by the model they were
// checked against.
//
// A model with a text vectorizer (Model.Text, from trained.Model.Text)
// takes documents as well as features, vectorized by the model they are
// scored with, and names its labels in its answers.
package serve
