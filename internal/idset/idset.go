// Package idset holds sets of node IDs as sorted slices: the members of a
// view as the election and the lock keep them (ascending, each once, no
// 0), so that membership is a binary search and two views compare with
// slices.Equal.
package idset

import "slices"

// Of returns the set of ids: a new slice, ascending, each ID once, without
// 0 (no node has ID 0). ids is not changed.
func Of(ids []uint64) []uint64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	s = slices.Compact(s)
	if len(s) > 0 && s[0] == 0 {
		s = s[1:]
	}
	return s
}

// InOrder returns ids in their own order, each ID once (its first time),
// without 0: a view's members as the view lists them (the coordinator
// first, or the order they joined). ids is not changed.
func InOrder(ids []uint64) []uint64 {
	s := make([]uint64, 0, len(ids))
	for _, id := range ids {
		if id != 0 && !slices.Contains(s, id) {
			s = append(s, id)
		}
	}
	return s
}
