package demo

import "github.com/huddle-lan/huddle/internal/logcheck"

// checkOrder checks total order and safe delivery (docs/design.md, guarantees 5
// and 6) over the run's logs: the one place the demo calls the order
// check. skipped says why it did not run ("" when it ran).
func checkOrder(r *logcheck.Run, o logcheck.MembershipOptions) (res *logcheck.Result, skipped string) {
	return r.CheckOrder(o), ""
}
