package repro

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hetsgd/hetsgd/setting"
)

// Selection is what a bench runs, as hetsgd bench's lists choose it: the
// studies (of Studies, in the order given), the sets of the adaptive and
// heterogeneity studies (Sets) and of the paper study (Paper), and the
// sections (Parts).
type Selection struct {
	Studies []string
	// NamedPaper says the paper study was named (--study paper), not only
	// implied by all: its absent sets are then an error, not a skip.
	NamedPaper  bool
	Sets, Paper []string
	Parts       []string
	// SetsIgnored says the sets given apply to none of the studies.
	SetsIgnored bool
}

// Runs says whether the selection runs study.
func (s *Selection) Runs(study string) bool { return slices.Contains(s.Studies, study) }

// Select reads hetsgd bench's --study, --sets (setsGiven: given, not its
// default) and --parts lists; its errors name those flags. Every name is
// checked before any work, whatever the studies: a misspelt one must not
// go unnoticed. The paper study without --sets runs the papers' sets that
// the data folder holds (all of PaperSetNames, which LoadSet finds or
// not).
func Select(study, sets string, setsGiven bool, parts string) (*Selection, error) {
	s := &Selection{}
	for _, name := range strings.Split(study, ",") {
		switch name = strings.TrimSpace(name); {
		case name == "all":
			s.Studies = append(s.Studies, Studies...)
		case slices.Contains(Studies, name):
			s.Studies = append(s.Studies, name)
			s.NamedPaper = s.NamedPaper || name == "paper"
		default:
			return nil, fmt.Errorf("--study %q: want %s or all", name, strings.Join(Studies, ", "))
		}
	}
	known := append(SetNames(), PaperSetNames()...)
	for _, name := range strings.Split(sets, ",") {
		switch name = strings.TrimSpace(name); {
		case name == "":
			return nil, fmt.Errorf("--sets %q: an empty name; want a comma-separated list of %s", sets, strings.Join(known, ", "))
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("--sets: unknown dataset %q%s (want %s)", name, setting.Suggest(name, known, ""), strings.Join(known, ", "))
		case slices.Contains(PaperSetNames(), name):
			s.Paper = append(s.Paper, name)
		default:
			s.Sets = append(s.Sets, name)
		}
	}
	switch {
	case len(s.Paper) > 0 && !s.Runs("paper"):
		return nil, fmt.Errorf("--sets %s: a paper's set at full scale, which only --study paper runs", s.Paper[0])
	case len(s.Paper) > 0 && len(s.Sets) > 0 && !s.Runs("adaptive") && !s.Runs("heterogeneity"):
		return nil, fmt.Errorf("--sets %s: --study paper runs only the papers' sets (%s)", s.Sets[0], strings.Join(PaperSetNames(), ", "))
	case s.Runs("paper") && !setsGiven:
		s.Paper = PaperSetNames() // those the data folder holds
	}
	s.SetsIgnored = setsGiven && !s.Runs("adaptive") && !s.Runs("heterogeneity") && !s.Runs("paper")
	if parts == "" {
		return s, nil
	}
	var sections []string
	if s.Runs("heterogeneity") {
		sections = append(sections, HeterogeneityParts...)
	}
	if s.Runs("paper") {
		sections = append(sections, PaperParts...)
	}
	for _, p := range strings.Split(parts, ",") {
		p = strings.TrimSpace(p)
		if len(sections) == 0 {
			return nil, fmt.Errorf("--parts %q: only the heterogeneity and paper studies have parts (--study %s)", p, study)
		}
		if !slices.Contains(sections, p) {
			return nil, fmt.Errorf("--parts %q: want %s", p, strings.Join(sections, ", "))
		}
		s.Parts = append(s.Parts, p)
	}
	return s, nil
}
