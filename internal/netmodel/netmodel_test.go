package netmodel_test

import (
	"testing"

	"github.com/huddle-lan/huddle/internal/netmodel"
)

func TestAddr(t *testing.T) {
	for id, want := range map[uint64]string{1: "10.0.0.1:7468", 258: "10.0.1.2:7468", 1 << 16: "10.1.0.0:7468"} {
		if got := netmodel.Addr(id).String(); got != want {
			t.Errorf("Addr(%d) = %s, want %s", id, got, want)
		}
	}
}
