package trained_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/model"
	"github.com/hetsgd/hetsgd/tfidf"
	"github.com/hetsgd/hetsgd/trained"
)

// A model without a vectorizer says so (ErrNoText); one with it in its
// archive reads it back, and its export carries it on; a vectorizer that
// is not the model's is refused, named.
func TestText(t *testing.T) {
	dir := t.TempDir()
	mlp, p := newMLP(t) // 6 features, 3 labels
	write := func(name string, extra map[string][]byte) string {
		var b bytes.Buffer
		if err := model.WriteNPZBytes(&b, mlp.Config(), p, extra); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	m, err := trained.Read(write("plain.npz", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Text(); !errors.Is(err, trained.ErrNoText) {
		t.Errorf("a model without a vectorizer: %v, want ErrNoText", err)
	}

	docs := []tfidf.Document{{Text: "red green blue", Labels: []string{"a", "b"}}, {Text: "cyan magenta yellow", Labels: []string{"c"}}}
	tm, _, _, _, err := tfidf.Sets(tfidf.Options{MinN: 1, MaxN: 1, MinDF: 1}, docs, nil)
	if err != nil || len(tm.Terms) != 6 || len(tm.Labels) != 3 {
		t.Fatalf("vectorizer %v %v: %v", tm.Terms, tm.Labels, err)
	}
	js, _ := json.Marshal(tm)
	m, err = trained.Read(write("text.npz", map[string][]byte{"tfidf": js}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Text()
	if err != nil || !slices.Equal(got.Terms, tm.Terms) || !slices.Equal(got.Labels, tm.Labels) {
		t.Fatalf("the archive's vectorizer: %v, %v", got, err)
	}
	var b bytes.Buffer
	if err := m.WriteNPZ(&b, nil); err != nil {
		t.Fatal(err)
	}
	if back, err := model.ReadNPZBytes(bytes.NewReader(b.Bytes()), int64(b.Len()), "tfidf", 1<<30); err != nil || !bytes.Equal(back, js) {
		t.Errorf("the export does not carry the vectorizer on: %v", err)
	}

	other := bytes.Replace(js, []byte(`"labels":["a","b","c"]`), []byte(`"labels":["a","b"]`), 1)
	m, err = trained.Read(write("other.npz", map[string][]byte{"tfidf": other}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Text(); err == nil || !strings.Contains(err.Error(), "has 6 terms and 2 labels") || !strings.Contains(err.Error(), "not its vectorizer") {
		t.Errorf("another model's vectorizer: %v", err)
	}
}
