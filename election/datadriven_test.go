package election

// Data-driven scripts of the elections (testdata/*.txt), on the shared
// driver (internal/testutil/script): the commands every script has
// (add-nodes, view, crash, tick, stabilize, drop, partition, heal, hide,
// show; see script.Driver.Do), and these:
//
//	options algorithm=ring|bully [order=ascending|descending|join]
//	                       the options of the machines made from now on
//	                       (the default: ring, ascending; the answer
//	                       timeout is 20ms, the coordinator timeout 50ms)
//	start 2                node 2 starts an election (Start)
//	leaders                each node's leader and the round that elected
//	                       it, or its state while it knows none
//
// Every message takes 1ms (script.LinkDelay). After every command the check holds: among
// the members of one view that know a leader, there is one leader, and
// it is the view's highest member. At the end of a script, every member
// of every view knows it. `go test ./election -run TestScripts -rewrite`
// writes what the machines print now as the expected output.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/huddle-lan/huddle/internal/testutil/script"
)

type electionScript = script.Driver[*Machine, Event]

func TestScripts(t *testing.T) {
	script.Run(t, "testdata", func(d *electionScript) script.Adapter[*Machine, Event] {
		d.Net.Collected = func(id uint64) {
			if err := d.Net.Nodes[id].M.invariants(); err != nil {
				d.T.Fatalf("%v\n%s", err, d.Net.Tail())
			}
		}
		return &electionAdapter{opt: Options{Algorithm: Ring, AnswerTimeout: 20 * time.Millisecond, CoordinatorTimeout: 50 * time.Millisecond}}
	})
}

type electionAdapter struct{ opt Options }

func (a *electionAdapter) New(_ *electionScript, id uint64) *Machine {
	o := a.opt
	o.Self = id
	return New(o)
}

func (a *electionAdapter) Message(_ uint64, m script.Msg) (string, string, bool) {
	msg, text, err := describe(m)
	if err != nil {
		return "", text, true
	}
	return msg.kind.String(), text, true
}

func (a *electionAdapter) Event(_ uint64, e Event) string {
	s := fmt.Sprintf("%v r%d", e.Kind, e.Round)
	switch e.Kind {
	case LeaderChanged:
		s += fmt.Sprintf(" leader %d", e.Leader)
	case Done:
		s += fmt.Sprintf(" leader %d sent %d", e.Leader, e.Sent)
		if e.Late {
			s += " late"
		}
	case Round:
		s += fmt.Sprintf(" sent %d", e.Sent)
	}
	return s
}

func (a *electionAdapter) Command(d *electionScript, td *datadriven.TestData) bool {
	switch td.Cmd {
	case "options":
		var alg, order string
		if td.MaybeScanArgs(d.T, "algorithm", &alg) {
			a.opt.Algorithm = Algorithm(alg)
		}
		if td.MaybeScanArgs(d.T, "order", &order) {
			a.opt.Order = RingOrder(order)
		}
	case "start":
		for _, id := range d.IDs(td, script.Words(td)) {
			d.Node(td, id)
			d.Net.Call(id, func(m *Machine) {
				if !m.Start(d.Net.Now) {
					d.Printf("%d: start refused (a round runs here)", id)
				}
			})
		}
	case "leaders":
		for _, id := range d.Net.IDs() {
			m := d.Net.Nodes[id].M
			switch ld, r := m.Leader(); {
			case ld != 0:
				fmt.Fprintf(&d.Out, "%d: leader %d (round %d)\n", id, ld, r)
			case m.busy():
				fmt.Fprintf(&d.Out, "%d: no leader, in round %d\n", id, m.round)
			default:
				fmt.Fprintf(&d.Out, "%d: no leader\n", id)
			}
		}
	default:
		return false
	}
	return true
}

// Check: among the members of a view that know a leader, one leader, the
// view's highest member.
func (a *electionAdapter) Check(d *electionScript) []string {
	var errs []string
	for _, id := range d.Net.IDs() {
		p := d.Net.Nodes[id]
		if ld, _ := p.M.Leader(); ld != 0 && ld != slices.Max(p.View) {
			errs = append(errs, fmt.Sprintf("node %d in view %s %v: leader %d, not the highest member", id, p.ViewID, p.View, ld))
		}
	}
	return errs
}

// Final: every member of every view knows its leader, from one round.
func (a *electionAdapter) Final(d *electionScript) []string {
	var errs []string
	round := map[string]uint64{}
	for _, id := range d.Net.IDs() {
		p := d.Net.Nodes[id]
		ld, r := p.M.Leader()
		if want := slices.Max(p.View); ld != want || round[p.ViewID] != 0 && round[p.ViewID] != r {
			errs = append(errs, fmt.Sprintf("node %d in view %s: leader %d of round %d; want %d, of round %d", id, p.ViewID, ld, r, want, round[p.ViewID]))
		}
		round[p.ViewID] = r
	}
	return errs
}
