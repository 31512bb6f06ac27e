package setting

import "strings"

// Suggest returns " (did you mean X?)" for the names nearest to name, or "",
// each name written after prefix ("--" for flags). A strategy option given
// without its strategy (beta) suggests every strategy's option of that name
// (adacons.beta, adaptive.beta).
func Suggest(name string, names []string, prefix string) string {
	var near []string
	for _, n := range names {
		if _, opt, ok := strings.Cut(n, "."); ok && opt == name {
			near = append(near, prefix+n)
		}
	}
	if len(near) > 0 {
		return " (strategy options go under the strategy's name: " + strings.Join(near, ", ") + ")"
	}
	best := len(name)/3 + 1 // a typo or two
	for _, n := range names {
		d := editDistance(name, n)
		switch {
		case d < best:
			best, near = d, []string{prefix + n}
		case d == best:
			near = append(near, prefix+n)
		}
	}
	if len(near) == 0 || len(near) > 3 {
		return ""
	}
	return " (did you mean " + strings.Join(near, " or ") + "?)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
