// Package runlog is the run log: its schema, one record type per kind of
// event (config, eval, merge, async, fault, note, resume, done), the writer
// every command logs through (Log) and the reader the dashboard, the
// figures and resumed runs read logs with (Read).
//
// A run log is JSON Lines: one JSON object per line, each with an "event"
// field naming its kind. The first record is the run's Config, which holds
// the schema's version (Schema) and the run's Settings; the last is Done.
// Later versions add fields and kinds of record; the names of those here
// never change, and readers skip what they do not know. docs/runlog.md
// documents every field.
package runlog
