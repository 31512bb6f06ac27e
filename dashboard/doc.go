// Package dashboard serves a live view of training runs: a web page that
// draws, as a run log grows, its P@1 and losses (test loss and train_loss)
// against training time and epochs, the samples per second, each device's
// batch size, learning rate, updates and merge weight at every merge (the
// Adaptive SGD paper's Fig. 12) with the perturbed merges marked, GEM's
// median π and the staleness of asynchronous updates, the faults,
// resumptions and notes, a summary of each run (best P@1 and where) and
// its settings (the config record, nested objects flattened to key paths).
// Several runs are overlaid, one colour per run; charts appear only when
// their data exist.
//
// The server knows nothing of training: callers hand it the lines of run
// logs, one JSON record each, with Server.Publish (a training loop, from
// its log's runlog.Log.Also) or Server.Follow (a log file written by
// another process, or a finished one). It keeps every record in memory, so
// that a page opened late sees the whole run. Two set-ups are ready made:
// StartLive serves one run in the background while a training loop
// publishes its log's records to it (hetsgd train --dashboard), and
// ServeLogs serves log files, each followed, until its context is done
// (hetsgd dashboard).
//
// Endpoints:
//
//	/          the page (HTML, JavaScript and CSS embedded in the binary)
//	/events    server-sent events: the records, live
//	/runs      the runs' names, a JSON array indexed by run
//
// In /events, every message event's data line is one record exactly as the
// log holds it, and its id is "RUN:N", the run's index and the record's
// number in that run, so that a client reconnecting with Last-Event-ID
// resumes where it stopped. Named events carry what is not a record:
// "hello" at each connection ({"instance": ..., "runs": [names]}; an
// instance other than the one a page knew means the server restarted, and
// the page starts over), "run" when a run is added ({"run": i, "name": s})
// and "reset" when a run's history starts over ({"run": i}: its log was cut
// back, as a resumed run does), after which its history follows anew.
//
// Publishing never waits for a client: a record is appended to the history
// and subscribers are woken without blocking; each client's handler sends
// what it has not yet sent at its own pace, and one that stops reading is
// disconnected after a write timeout.
//
// The page makes no request outside the server (no chart library, font or
// script from a network; a Content-Security-Policy of 'self' enforces it)
// and works offline. Serve listens on the address it is given; callers
// should default to loopback (DefaultAddr) and warn when IsLoopback is
// false, since the page then shows the runs to the network.
package dashboard
