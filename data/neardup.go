package data

import (
	"cmp"
	"math"
	"slices"
)

// Near-duplicates: two points whose feature sets overlap by a Jaccard
// index of at least jaccardNum/jaccardDen, both with at least
// nearDuplicateMinFeatures features (shorter rows coincide by chance).
// Real sets have many: 18.7 % of Delicious's points (training and test
// splits together) and 8.1 % of Bibtex's, in families of up to hundreds
// of points, which the stand-in's model does not generate; reports set
// the share beside the stand-in's so that the difference shows. It is
// measured on at most nearDuplicateMaxPoints points, since it grows with
// their number, and on no more than nearDuplicateMaxEntries features in
// all on average, so that rows of thousands of features cost megabytes,
// not gigabytes (at Delicious-200K's 301 features a point, about 13,900
// points).
const (
	jaccardNum, jaccardDen   = 1, 2 // whole numbers, so that every bound is exact
	nearDuplicateMinFeatures = 5
	nearDuplicateMaxPoints   = 20000
	nearDuplicateMaxEntries  = 4 << 20
)

// nearDuplicateRows returns how many of n points, of perPoint features
// on average, the near-duplicates are counted on.
func nearDuplicateRows(n int, perPoint float64) int {
	return min(n, nearDuplicateMaxPoints, max(1, int(nearDuplicateMaxEntries/math.Max(perPoint, 1))))
}

// nearDuplicateShare returns the share of the rows that have a
// near-duplicate among the others (each row a set of feature ids, no id
// twice). It joins them by prefix filtering (Bayardo, Ma and Srikant,
// "Scaling up all pairs similarity search", WWW 2007): with the features
// ranked rarest first, two rows of Jaccard index t or more share c ≥
// t·max(|x|, |y|) features, so each row's first |x| − ⌈t·|x|⌉ + 1 ranks
// share one with the other's, and only rows that do are compared in
// full. Rows that are exactly equal are joined first, so a set of many
// copies costs no more than its distinct rows.
func nearDuplicateShare(rows [][]int32) float64 {
	if len(rows) == 0 {
		return 0
	}
	const p, q = jaccardNum, jaccardDen // t = p/q
	var maxID int32 = -1
	for _, r := range rows {
		if len(r) >= nearDuplicateMinFeatures {
			for _, f := range r {
				maxID = max(maxID, f)
			}
		}
	}
	freq := make([]int32, maxID+1)
	for _, r := range rows {
		if len(r) >= nearDuplicateMinFeatures {
			for _, f := range r {
				freq[f]++
			}
		}
	}
	// Rank the features rarest first (ties by id), and rewrite each long
	// enough row as its sorted ranks.
	var feats []int32
	for f, c := range freq {
		if c > 0 {
			feats = append(feats, int32(f))
		}
	}
	slices.SortFunc(feats, func(a, b int32) int {
		return cmp.Or(cmp.Compare(freq[a], freq[b]), cmp.Compare(a, b))
	})
	rank := make([]int32, maxID+1)
	for i, f := range feats {
		rank[f] = int32(i)
	}
	type row struct {
		ranks []int32
		ids   []int // the rows equal to it
	}
	var long []row
	for i, r := range rows {
		if len(r) < nearDuplicateMinFeatures {
			continue
		}
		rs := make([]int32, len(r))
		for j, f := range r {
			rs[j] = rank[f]
		}
		slices.Sort(rs)
		long = append(long, row{ranks: rs, ids: []int{i}})
	}
	// Equal rows: sorted next to each other, merged into the first.
	slices.SortFunc(long, func(a, b row) int {
		return cmp.Or(cmp.Compare(len(a.ranks), len(b.ranks)), slices.Compare(a.ranks, b.ranks))
	})
	distinct := long[:0]
	for _, r := range long {
		if n := len(distinct); n > 0 && slices.Equal(distinct[n-1].ranks, r.ranks) {
			distinct[n-1].ids = append(distinct[n-1].ids, r.ids...)
			continue
		}
		distinct = append(distinct, r)
	}
	// In order of size, each row probes the rows before it that share a
	// rank of its prefix, then joins the index. A row y already indexed is
	// no longer than x, so c ≥ t/(1+t)·(|x|+|y|) ≥ 2t/(1+t)·|y|: y need
	// only index its first |y| − ⌈2t/(1+t)·|y|⌉ + 1 ranks.
	has := make([]bool, len(distinct))
	for i, r := range distinct {
		has[i] = len(r.ids) > 1
	}
	// A posting is a row and the place of the rank in it. The first time x
	// meets y is at their smallest common rank (any smaller one would be
	// in both prefixes and met first), at places px and py, so they share
	// at most 1 + min(|x|−px−1, |y|−py−1) ranks: fewer than needed and y
	// is dropped unread (the positional filter of Xiao et al.'s PPJoin,
	// WWW 2008); otherwise the rest of both is merged from there.
	postings := make([][][2]int32, len(feats))
	seen := make([]int32, len(distinct)) // i+1 once met by row i
	for i, x := range distinct {
		m := len(x.ranks)
		for px, k := range x.ranks[:m-ceilDiv(p*m, q)+1] {
			for _, e := range postings[k] {
				j, py := e[0], int(e[1])
				if seen[j] == int32(i+1) {
					continue
				}
				seen[j] = int32(i + 1)
				if has[i] && has[j] {
					continue
				}
				y := distinct[j].ranks
				if q*len(y) < p*m {
					continue
				}
				// c ≥ t·(m+|y|−c) ⇔ c ≥ t/(1+t)·(m+|y|).
				need := ceilDiv(p*(m+len(y)), p+q)
				if 1+min(m-px-1, len(y)-py-1) < need {
					continue
				}
				if atLeast(x.ranks[px+1:], y[py+1:], need-1) {
					has[i], has[j] = true, true
				}
			}
		}
		for pos, k := range x.ranks[:m-ceilDiv(2*p*m, p+q)+1] {
			postings[k] = append(postings[k], [2]int32{int32(i), int32(pos)})
		}
	}
	n := 0
	for i, r := range distinct {
		if has[i] {
			n += len(r.ids)
		}
	}
	return float64(n) / float64(len(rows))
}

// ceilDiv returns ⌈a/b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// atLeast reports whether two increasing slices share at least need
// values, stopping as soon as the rest cannot make up the difference.
func atLeast(a, b []int32, need int) bool {
	c := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		if c+min(len(a)-i, len(b)-j) < need {
			return false
		}
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			c++
			i++
			j++
		}
	}
	return c >= need
}
