package data

import (
	"fmt"
	"slices"
	"strings"
)

// LookupLike resolves what hetsgd data gen --like names, when it is not a
// paper's set (PaperStandIn) or data to fit, to a profile of the earlier
// generator: profile:NAME, or a bare NAME that is not a paper's set. The
// papers' names mean their stand-ins, and profile:NAME keeps earlier
// figures reproducible.
func LookupLike(like string) (Profile, error) {
	if name, ok := strings.CutPrefix(like, "profile:"); ok {
		return LookupProfile(name)
	}
	if slices.Contains(PaperStandInNames(), like) {
		return Profile{}, fmt.Errorf("%s is a paper's set", like)
	}
	return LookupProfile(like)
}

// BareProfileNames are the profiles a bare name still selects (LookupLike):
// those that are not a paper's set.
func BareProfileNames() []string {
	var names []string
	for _, n := range ProfileNames() {
		if !slices.Contains(PaperStandInNames(), n) {
			names = append(names, n)
		}
	}
	return names
}
