package strategy_test

import (
	"strings"
	"testing"

	"github.com/hetsgd/hetsgd/strategy"
	_ "github.com/hetsgd/hetsgd/strategy/all"
)

// A mistyped strategy's name is answered with the nearest names; one near
// none lists them all only.
func TestLookupSuggests(t *testing.T) {
	for name, want := range map[string]string{
		"adaptve": `unknown strategy "adaptve" (did you mean adaptive?) (have `,
		"Sync":    `unknown strategy "Sync" (did you mean sync?) (have `,
		"zzzzzzz": `unknown strategy "zzzzzzz" (have `,
	} {
		if _, err := strategy.Lookup(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q): %v, want %q", name, err, want)
		}
	}
}
