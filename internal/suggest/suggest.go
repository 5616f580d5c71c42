// Package suggest finds the name a misspelled one most likely meant, for
// the "did you mean" of an unknown configuration key, variable or flag.
package suggest

import "strings"

// Closest returns the key among keys that name most likely misspells, for
// a "did you mean" hint: the one nearest by edit distance, comparing both
// the whole names and their last parts, so that "c1" finds "srm.c1" and
// "log.heartbeat" finds "heartbeat". flat writes a key the way name is
// written (env names have "_" where keys have "."). There is no answer
// when the nearest is too far to be a slip of the keyboard, or when two
// keys are equally near.
func Closest(name string, keys []string, flat func(string) string) (string, bool) {
	limit := min(2, len(name)/3)
	best, bestDist, tie := "", limit+1, false
	for _, k := range keys {
		d := limit + 1
		for _, p := range [][2]string{{name, flat(k)}, {lastPart(name), lastPart(k)}} {
			if len(p[0]) <= len(p[1])+limit && len(p[1]) <= len(p[0])+limit { // else too far apart
				d = min(d, Distance(p[0], p[1]))
			}
		}
		switch {
		case d < bestDist:
			best, bestDist, tie = k, d, false
		case d == bestDist && k != best:
			tie = true
		}
	}
	if best == "" || tie {
		return "", false
	}
	return best, true
}

// lastPart returns what follows the last "." in key.
func lastPart(key string) string {
	return key[strings.LastIndexByte(key, '.')+1:]
}

// Distance is the optimal string alignment distance between a and b: the
// fewest insertions, deletions, substitutions and swaps of two adjacent
// bytes that turn a into b.
func Distance(a, b string) int {
	// rows[i%3][j] is the distance between a[:i] and b[:j].
	var rows [3][]int
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur, prev, prev2 := rows[i%3], rows[(i-1)%3], rows[(i+1)%3]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
	}
	return rows[len(a)%3][len(b)]
}
