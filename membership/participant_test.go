package membership

import (
	"fmt"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/wire"
)

// The participant on its own: node 2 of view 4.1[1 2 3], in flush 5/1@1.

func testParticipant(old *participant) *participant {
	return newParticipant(flushID{Epoch: 5, Attempt: 1, Initiator: 1}, coordView.Members, viewA, 1, t0, false, old)
}

func seqs(ds []Delivery) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%d/%d", d.Source, d.Seq))
	}
	return fmt.Sprint(out)
}

// Until it reports, a message of the view is delivered; after, it waits
// for the cut, which releases what it covers in arrival order and keeps
// the rest, to be dropped at the install.
func TestParticipantHoldsForTheCut(t *testing.T) {
	p := testParticipant(nil)
	if p.hold(msg(3, 1, wire.FIFO)) {
		t.Fatal("held before the report")
	}
	ok := p.makeReport(7, 4, []wire.Cut{{ID: 1, Seq: 2}, {ID: 2, Seq: 4}, {ID: 3, Seq: 1}}, wire.Known{})
	if ok.Phase != wire.FlushState || ok.Prior != viewA || ok.Sent != 4 || ok.Initiator != 1 || p.report.Sent != 4 {
		t.Fatalf("report %+v", ok)
	}
	for _, d := range []Delivery{msg(3, 2, wire.FIFO), msg(1, 3, wire.Total), msg(3, 3, wire.FIFO), msg(1, 4, wire.FIFO)} {
		if !p.hold(d) {
			t.Fatalf("%d/%d not held after the report", d.Source, d.Seq)
		}
	}
	cuts := []wire.ViewCut{{View: viewB, Inc: 1, Cuts: []wire.Cut{{ID: 3, Seq: 99}}},
		{View: viewA, Inc: 1, Cuts: []wire.Cut{{ID: 1, Seq: 3}, {ID: 2, Seq: 4}, {ID: 3, Seq: 3}}}}
	if got := seqs(p.takeCut(cuts)); got != "[3/2 1/3 3/3]" || seqs(p.held) != "[1/4]" {
		t.Fatalf("the cut released %s and kept %s", got, seqs(p.held))
	}
	if p.hold(msg(3, 3, wire.FIFO)) || !p.hold(msg(3, 4, wire.FIFO)) {
		t.Fatal("after the cut, a message within it is delivered, one past it held")
	}
	// A flush that supersedes this one takes over what it held.
	if q := testParticipant(p); seqs(q.held) != "[1/4 3/4]" {
		t.Fatalf("the next flush holds %s", seqs(q.held))
	}
}

func TestParticipantConfirms(t *testing.T) {
	p := testParticipant(nil)
	p.makeReport(7, 4, nil, wire.Known{})
	retry := 4 * time.Millisecond
	if !p.complete() || p.complete() {
		t.Fatal("holding the cut is news once")
	}
	ok := p.confirmation(t0, retry, 7)
	if ok.Phase != wire.FlushCut || ok.Sent != 4 || ok.PriorInc != 1 {
		t.Fatalf("confirmation %+v", ok)
	}
	if p.resendDue(t0.Add(retry-1)) || !p.resendDue(t0.Add(retry)) {
		t.Fatal("the confirmation is resent every retry")
	}
	c := &wire.ViewCommit{Epoch: 5, Attempt: 1, Members: []wire.ViewMember{{ID: 1, Inc: 1, Next: 3}}, Cuts: []wire.ViewCut{{View: viewA, Inc: 1, Cuts: []wire.Cut{{ID: 1, Seq: 2}}}}}
	p.accept(c)
	c.Members[0].Next, c.Cuts[0].Cuts[0].Seq, c.Cuts[0].Inc = 9, 9, 9
	if p.commit.Members[0].Next != 3 || p.commit.Cuts[0].Cuts[0].Seq != 2 || p.commit.Cuts[0].Inc != 1 {
		t.Fatalf("the commit kept shares the message's: %+v", p.commit)
	}
}

// Another initiator's flush is given up when the initiator is quiet for
// a suspect timeout, or when the attempt runs past two without a commit;
// this node's own flush never here.
func TestParticipantExpires(t *testing.T) {
	for _, tc := range []struct {
		name      string
		initiator uint64
		heard     time.Duration // the initiator last heard at
		commit    bool
		at        time.Duration
		want      bool
	}{
		{"heard lately", 1, 0, false, testST - 1, false},
		{"quiet", 1, 0, false, testST, true},
		{"heard, but too long", 1, 2*testST - 1, false, 2 * testST, true},
		{"too long, committed", 1, 2*testST - 1, true, 2 * testST, false},
		{"its own", 2, 0, false, 3 * testST, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newParticipant(flushID{Epoch: 5, Attempt: 1, Initiator: tc.initiator}, coordView.Members, viewA, 1, t0, false, nil)
			p.heardFrom(t0.Add(tc.heard))
			if tc.commit {
				p.accept(&wire.ViewCommit{Epoch: 5, Attempt: 1})
			}
			if got := p.expired(t0.Add(tc.at), 2, testST); got != tc.want {
				t.Fatalf("expired %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParticipantDeadline(t *testing.T) {
	p := testParticipant(nil)
	if got := p.deadline(2, testST); got != t0.Add(testST) {
		t.Fatalf("deadline +%v, want when the initiator has been quiet too long", got.Sub(t0))
	}
	p.complete()
	p.confirmation(t0, time.Millisecond, 7)
	if got := p.deadline(2, testST); got != t0.Add(time.Millisecond) {
		t.Fatalf("deadline +%v, want the confirmation's resend", got.Sub(t0))
	}
	if own := newParticipant(flushID{Epoch: 5, Attempt: 1, Initiator: 2}, coordView.Members, viewA, 1, t0, false, nil); !own.deadline(2, testST).IsZero() {
		t.Fatal("its own flush, not confirmed yet, needs no tick")
	}
}
