// Package trained is a trained model, wherever it was saved, and what is
// done with it once training is over: it is scored on a test set (P@k,
// nDCG@k, the loss: NewEvaluator, Evaluate), asked for each point's top
// labels (metric.Predict with its network and parameters), or exported as
// an .npz archive (WriteNPZ).
//
// A model is saved in one of three forms, and Load reads any of them:
//
//   - a checkpoint folder (engine.Checkpointing.Dir): Which says which of
//     its models — Last, that of its newest checkpoint, or Best, that of
//     the run's best evaluation, which the engine keeps beside the
//     checkpoints in best.hck (engine.Checkpointing.KeepBest);
//   - one checkpoint file, or a best.hck named as a file;
//   - an .npz archive of model.WriteNPZ (hetsgd export), told from a
//     checkpoint by its first bytes (a zip's "PK").
//
// A checkpoint holds the evaluation that scored its model (Model.Scored),
// so that a caller can say which model it took, and the settings of the
// run that trained it: the run's config record (Model.Run) and the test
// set it scored the model on (Model.TestData), which a scoring command
// may take when given none. An archive carries them on in its model card
// (Card, written by WriteNPZ).
//
// Memory. Open reads what a file holds but the parameters; ReadParams
// reads them once what the caller will hold with the model — a workspace
// of its rows, the data, an export's copy (Use) — is known to fit in the
// memory the process may use (package internal/memory), so that a model
// too large is refused with the figures before anything large is
// allocated. Load is Open and ReadParams.
//
// Text. A model trained on a set that hetsgd data from-text made has a
// text vectorizer (package tfidf), which Text finds: in the archive, or
// beside the checkpoint, where hetsgd train copies it; a model without one
// is ErrNoText.
//
// Errors. The readers' errors (os, checkpoint, engine) pass through as
// they are: they name the file already, and a front end puts its own name
// for the path before them (hetsgd says "--model: …"); a file of neither
// form gets checkpoint's error with the forms wanted. An archive's errors
// come as an *NPZError, which names the archive. Load's own refusals are
// ErrWhich, ErrNotFolder and ErrNoBest; scoring's are a *ShapeError,
// ErrNoPoints and ErrOverflow. A front end that words them for its users
// tells them apart with errors.Is and errors.As.
package trained
