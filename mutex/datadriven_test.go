package mutex

// Data-driven scripts of the locks (testdata/*.txt), on the shared driver
// (internal/testutil/script): the commands every script has (add-nodes,
// view, crash, tick, stabilize, drop, partition, heal, hide, show; see
// script.Driver.Do), and these:
//
//	options algorithm=ra|central|token
//	                       the algorithm of the machines made from now on
//	                       (the default: ra, without a quorum)
//	request 2              node 2 asks for the lock (Request)
//	release 2              node 2 releases it, or withdraws its request
//	states                 each node's state: released, wanted, or held
//	                       (and the view it acquired the lock in)
//
// Every message takes 1ms (script.LinkDelay); the central server's and the token ring's go
// to every member of the view, the sender too, in one order (the
// network's: with one delay for all, every member takes them in the order
// they were sent), as the group's total order delivers them. After every
// command the check holds: at most one node holds the lock.
// `go test ./mutex -run TestScripts -rewrite` writes what the machines
// print now as the expected output.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/huddle-lan/huddle/internal/testutil/script"
)

// lockNode is a lock machine of any algorithm on the script's network.
type lockNode struct{ Lock }

func (n lockNode) SetView(now time.Time, view string, members []uint64) {
	n.Lock.SetView(now, view, members, nil)
}

func (n lockNode) Take() ([]script.Msg, []Event) {
	rd := n.Ready()
	return messagesOf(rd.Messages), rd.Events
}

type lockScript = script.Driver[lockNode, Event]

func TestScripts(t *testing.T) {
	script.Run(t, "testdata", func(d *lockScript) script.Adapter[lockNode, Event] {
		return &lockAdapter{alg: RicartAgrawala}
	})
}

type lockAdapter struct{ alg Algorithm }

func (a *lockAdapter) New(_ *lockScript, id uint64) lockNode {
	return lockNode{NewLock(Options{Self: id, Algorithm: a.alg})}
}

func (a *lockAdapter) Message(_ uint64, m script.Msg) (string, string, bool) {
	text := Describe(m.Payload)
	kind, _, _ := strings.Cut(text, " ")
	return kind, text, true
}

func (a *lockAdapter) Event(_ uint64, e Event) string {
	s := e.Kind.String()
	switch e.Kind {
	case Requested:
		s += fmt.Sprintf(" ts %d", e.Clock)
	case Acquired:
		s += fmt.Sprintf(" ts %d in %s after %v, %d messages", e.Clock, e.View, e.Wait, e.Messages)
	case Exited:
		s += fmt.Sprintf(" ts %d after %v", e.Clock, e.Held)
		if e.Lost {
			s += " lost"
		}
	case Deferred:
		s += fmt.Sprintf(" %d's request ts %d", e.Peer, e.Clock)
	case Withdrawn:
		s += fmt.Sprintf(" ts %d after %v", e.Clock, e.Wait)
	}
	return s
}

func (a *lockAdapter) Command(d *lockScript, td *datadriven.TestData) bool {
	switch td.Cmd {
	case "options":
		var alg string
		td.ScanArgs(d.T, "algorithm", &alg)
		a.alg = Algorithm(alg)
	case "request", "release":
		for _, id := range d.IDs(td, script.Words(td)) {
			d.Node(td, id)
			d.Net.Call(id, func(n lockNode) {
				ok := td.Cmd == "request" && n.Request(d.Net.Now) || td.Cmd == "release" && n.Release(d.Net.Now)
				if !ok {
					d.Printf("%d: %s refused (%v)", id, td.Cmd, n.State())
				}
			})
		}
	case "states":
		for _, id := range d.Net.IDs() {
			n := d.Net.Nodes[id].M
			fmt.Fprintf(&d.Out, "%d: %v", id, n.State())
			if v := n.HeldView(); v != "" {
				fmt.Fprintf(&d.Out, " (acquired in %s)", v)
			}
			d.Out.WriteByte('\n')
		}
	default:
		return false
	}
	return true
}

// Check: at most one node holds the lock.
func (a *lockAdapter) Check(d *lockScript) []string {
	var holders []uint64
	for _, id := range d.Net.IDs() {
		if d.Net.Nodes[id].M.State() == Held {
			holders = append(holders, id)
		}
	}
	if len(holders) > 1 {
		return []string{fmt.Sprintf("nodes %v all hold the lock", holders)}
	}
	return nil
}
