package idset

import (
	"slices"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct{ in, want []uint64 }{
		{nil, []uint64{}},
		{[]uint64{0}, []uint64{}},
		{[]uint64{3, 1, 2}, []uint64{1, 2, 3}},
		{[]uint64{5, 0, 5, 2, 0, 2}, []uint64{2, 5}},
	} {
		in := slices.Clone(tc.in)
		got := Of(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Of(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(tc.in, in) {
			t.Errorf("Of changed its argument: %v, was %v", tc.in, in)
		}
	}
}

func TestInOrder(t *testing.T) {
	for _, tc := range []struct{ in, want []uint64 }{
		{nil, []uint64{}},
		{[]uint64{0, 0}, []uint64{}},
		{[]uint64{3, 1, 2}, []uint64{3, 1, 2}},
		{[]uint64{5, 0, 5, 2, 0, 7, 2}, []uint64{5, 2, 7}},
	} {
		in := slices.Clone(tc.in)
		if got := InOrder(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("InOrder(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(tc.in, in) {
			t.Errorf("InOrder changed its argument: %v, was %v", tc.in, in)
		}
	}
}
