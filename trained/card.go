package trained

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetsgd/hetsgd/runlog"
)

// Card is the model card an exported archive carries (model.WriteNPZCard):
// what the model is, how it was made and how it scored, as JSON that
// NumPy reads with json.loads(numpy.load(path)["card"].tobytes()).
type Card struct {
	// Hetsgd is the version of hetsgd that exported the model, Exported
	// when (RFC 3339, UTC), From the file it was read from.
	Hetsgd   string `json:"hetsgd"`
	Exported string `json:"exported"`
	From     string `json:"from"`
	// The network: features, hidden widths, labels, parameters.
	Inputs     int   `json:"inputs"`
	Hidden     []int `json:"hidden"`
	Outputs    int   `json:"outputs"`
	Parameters int   `json:"parameters"`
	// Scored is the evaluation that scored the model (for a best model,
	// the run's best P@1 and its epoch), when known.
	Scored *runlog.Eval `json:"scored,omitempty"`
	// TestData is the test set it was scored on, as eval --data takes it,
	// and TestFormat its format when the run named one (--format).
	TestData   string `json:"test_data,omitempty"`
	TestFormat string `json:"test_format,omitempty"`
	// Run is the run log's config record of the run that trained it: its
	// settings, its data and the data's digest (data_digest), the hetsgd
	// that trained it.
	Run json.RawMessage `json:"run,omitempty"`
}

// Card returns the model's card, for an export by hetsgd of version at
// now.
func (m *Model) Card(version string, now time.Time) *Card {
	c := m.Config()
	return &Card{Hetsgd: version, Exported: now.UTC().Format(time.RFC3339), From: m.File,
		Inputs: c.Inputs, Hidden: append([]int{}, c.Hidden...), Outputs: c.Outputs, Parameters: m.NumParams(),
		Scored: m.Scored, TestData: m.TestData, TestFormat: m.TestFormat, Run: m.Run}
}

// runOf reads, from the settings a checkpoint holds (hetsgd train's: the
// flags given, with input paths made absolute, and the run's config
// record), the config record and the test set the run scored its models
// on: --test's file, --data's folder, or the bundled set the record names,
// with its --format.
func runOf(settings []byte) (run json.RawMessage, test, format string) {
	var s struct {
		Flags  [][2]string     `json:"flags"`
		Config json.RawMessage `json:"config"`
	}
	if json.Unmarshal(settings, &s) != nil || s.Config == nil {
		return nil, "", ""
	}
	for _, kv := range s.Flags {
		switch {
		case kv[1] == "":
		case kv[0] == "test", kv[0] == "data" && test == "":
			test = kv[1]
		case kv[0] == "format" && kv[1] != "auto":
			format = kv[1]
		}
	}
	var rec runlog.Config
	if test == "" && json.Unmarshal(s.Config, &rec) == nil {
		if name, ok := strings.CutPrefix(rec.Data, "bundled "); ok {
			test = "bundled:" + name
		}
	}
	if test != "" && !strings.HasPrefix(test, "bundled:") && !filepath.IsAbs(test) {
		test = "" // saved before input paths were made absolute: relative to where?
	}
	return s.Config, test, format
}
