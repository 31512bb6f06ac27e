package setting

import "testing"

func TestSuggest(t *testing.T) {
	names := []string{"epochs", "eval-every", "devices", "adaptive.beta", "adacons.beta", "strategy"}
	for _, c := range []struct{ name, want string }{
		{"epoch", " (did you mean --epochs?)"},
		{"devcies", " (did you mean --devices?)"},
		{"beta", " (strategy options go under the strategy's name: --adaptive.beta, --adacons.beta)"},
		{"zzzzzz", ""},
	} {
		if got := Suggest(c.name, names, "--"); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
