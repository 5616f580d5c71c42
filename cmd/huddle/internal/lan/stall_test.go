package lan_test

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lan"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// TestFrozenReceiverBoundsSenderMemory freezes one of two receivers of a
// saturating sender with SIGSTOP for 10s and checks that the sender's
// memory stays bounded: its send window (unstable) never exceeds the
// configured 1024 messages, its retransmission buffer stays within the
// ring it allocates, its RSS stays under 100 MB and does not grow while
// the receiver is frozen; that it declares the frozen receiver lost and
// keeps sending to the other one; and, after SIGCONT, that it sees the
// receiver again. What the thawed receiver logs (stream.skipped: the
// sender no longer holds what it missed) is reported, not judged: at this
// layer that is expected, membership will exclude such a member.
func TestFrozenReceiverBoundsSenderMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("freezes a receiver for 10s; skipped in -short mode")
	}
	const (
		window    = 1024
		freeze    = 10 * time.Second
		rssBound  = 100 << 10 // kB
		rssGrowth = 16 << 10  // kB: most the RSS may grow while the receiver is frozen
	)
	l := newLAN(t, keepLogs(t, lan.Options{Hosts: 3}))
	bin := buildHuddle(t)
	common := []string{"--duration", "60s"} // a bound only: the test stops them
	recv2 := startNode(t, l, bin, 2, common...)
	recv3 := startNode(t, l, bin, 3, common...)
	sender := startNode(t, l, bin, 1, append(common, "--send-rate", "100000", "--send-window", strconv.Itoa(window),
		"--send-size", "1000", "--stats-interval", "100ms")...)
	all := []*lan.Proc{sender, recv2, recv3}
	waitPeers(t, l, 1, sender, 5*time.Second, l.Hosts())
	senderPID, frozenPID := huddlePID(t, sender, bin), huddlePID(t, recv3, bin)

	warm := sampleRSS(t, senderPID, 1500*time.Millisecond)
	stopAt := time.Now()
	if err := syscall.Kill(frozenPID, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP node 3 (pid %d): %v", frozenPID, err)
	}
	frozen := sampleRSS(t, senderPID, freeze)
	contAt := time.Now()
	if err := syscall.Kill(frozenPID, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT node 3 (pid %d): %v", frozenPID, err)
	}
	after := sampleRSS(t, senderPID, 3*time.Second)
	for _, p := range all {
		if p.Exited() {
			t.Fatalf("%s exited (code %d):\n%s", p.Name, p.ExitCode(), readLog(t, p))
		}
	}
	stopNodes(t, all...)

	r := loadLogs(t, l, 1, 2, 3)
	s := onlyLife(t, r, 1)
	t.Logf("sender RSS (kB): warm-up %v; frozen %v; after SIGCONT %v", warm, frozen, after)
	checkSenderBuffers(t, s, window)
	checkRSS(t, warm, frozen, after, rssBound, rssGrowth)
	lostAt := checkLost(t, s, stopAt, contAt)
	checkKeepsSending(t, s, lostAt, contAt)
	reportThaw(t, r, contAt)
}

// rss is one VmRSS sample in kB.
type rss struct {
	at time.Time
	kB int64
}

func (s rss) String() string { return strconv.FormatInt(s.kB, 10) }

// sampleRSS samples pid's VmRSS every 250ms for d.
func sampleRSS(t *testing.T, pid int, d time.Duration) []rss {
	t.Helper()
	var out []rss
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		kB, err := lan.ProcStatus(pid, "VmRSS")
		if err != nil {
			t.Fatalf("sender: %v", err)
		}
		out = append(out, rss{time.Now(), kB})
	}
	return out
}

// checkSenderBuffers: from the sender's periodic node.stats, unstable
// never exceeds the window, buffered never exceeds the ring the sender
// allocates for its own messages (twice the window; it receives no data),
// and the window did fill (else the test did not saturate anything).
func checkSenderBuffers(t *testing.T, s *logcheck.Life, window int64) {
	t.Helper()
	var maxUnstable, maxBuffered, maxBytes int64
	for _, st := range s.Stats {
		maxUnstable = max(maxUnstable, st.Get("unstable"))
		maxBuffered = max(maxBuffered, st.Get("buffered"))
		maxBytes = max(maxBytes, st.Get("buffer_bytes"))
	}
	last, _ := s.LastStats()
	t.Logf("sender: %d node.stats; max unstable %d (window %d), max buffered %d (%d bytes); at exit %s",
		len(s.Stats), maxUnstable, window, maxBuffered, maxBytes,
		statsLine(last, "msgs_sent", "window_full", "nacks_recv", "nacks_unanswerable", "repairs_sent", "peers"))
	if len(s.Stats) < 50 {
		t.Errorf("sender logged %d node.stats, want one per 100ms", len(s.Stats))
	}
	if maxUnstable > window {
		t.Errorf("sender: unstable reached %d, over the window of %d", maxUnstable, window)
	}
	if maxBuffered > 2*window {
		t.Errorf("sender: buffered reached %d messages, over twice the window (%d)", maxBuffered, 2*window)
	}
	if last.Get("window_full") == 0 {
		t.Errorf("sender never found its window full: the test did not saturate it")
	}
}

// checkRSS: under bound throughout, and no growth beyond growth from 2s
// into the freeze (when the receiver is lost and the window drained) to
// its end.
func checkRSS(t *testing.T, warm, frozen, after []rss, bound, growth int64) {
	t.Helper()
	var peak int64
	for _, s := range append(append(append([]rss{}, warm...), frozen...), after...) {
		peak = max(peak, s.kB)
	}
	if peak > bound {
		t.Errorf("sender RSS peaked at %d kB, over %d kB", peak, bound)
	}
	ref := frozen[0]
	for _, s := range frozen {
		if s.at.Sub(frozen[0].at) <= 2*time.Second {
			ref = s
		}
	}
	end := frozen[len(frozen)-1]
	t.Logf("sender RSS: peak %d kB; while frozen %d kB at +2s, %d kB at the end (%+d kB)", peak, ref.kB, end.kB, end.kB-ref.kB)
	if end.kB-ref.kB > growth {
		t.Errorf("sender RSS grew by %d kB while the receiver was frozen, over %d kB", end.kB-ref.kB, growth)
	}
}

// checkLost wants the sender to log peer.lost for node 3 while it was
// frozen, and returns when.
func checkLost(t *testing.T, s *logcheck.Life, stopAt, contAt time.Time) time.Time {
	t.Helper()
	for _, p := range s.Peers {
		if p.Event == logs.PeerLost && p.Peer == 3 && p.Time.After(stopAt) && p.Time.Before(contAt) {
			t.Logf("sender declared node 3 lost %v after SIGSTOP", p.Time.Sub(stopAt).Round(time.Millisecond))
			return p.Time
		}
	}
	t.Fatalf("sender logged no peer.lost for node 3 while it was frozen (%s to %s); peer events: %v",
		stopAt.Format("15:04:05.000"), contAt.Format("15:04:05.000"), s.Peers)
	return time.Time{}
}

// checkKeepsSending wants msgs_sent to grow from the loss of node 3 to the
// SIGCONT, and reports the rate before, during and after.
func checkKeepsSending(t *testing.T, s *logcheck.Life, lostAt, contAt time.Time) {
	t.Helper()
	at := func(when time.Time) (int64, time.Time) { // msgs_sent of the last stats before when
		var n int64
		var ts time.Time
		for _, st := range s.Stats {
			if st.Time.After(when) {
				break
			}
			n, ts = st.Get("msgs_sent"), st.Time
		}
		return n, ts
	}
	n0, t0 := at(lostAt.Add(200 * time.Millisecond))
	n1, t1 := at(contAt)
	last, _ := s.LastStats()
	rate := func(a, b int64, ta, tb time.Time) string {
		return fmt.Sprintf("%.0f msgs/s", float64(b-a)/tb.Sub(ta).Seconds())
	}
	first := s.Stats[0]
	t.Logf("sender msgs_sent: %d before the freeze was noticed (%s), %d more while node 3 was lost (%s), %d more after SIGCONT (%s)",
		n0, rate(first.Get("msgs_sent"), n0, first.Time, t0), n1-n0, rate(n0, n1, t0, t1),
		last.Get("msgs_sent")-n1, rate(n1, last.Get("msgs_sent"), t1, last.Time))
	if n1-n0 < 1000 {
		t.Errorf("sender sent %d messages in the %v after it lost node 3, want it to keep sending", n1-n0, t1.Sub(t0).Round(time.Millisecond))
	}
	// Once node 3 is back, it must not hold the window forever: it skips
	// what the sender no longer holds and requests the rest.
	n2, t2 := at(contAt.Add(2 * time.Second))
	if end := last.Get("msgs_sent"); end == n2 {
		t.Errorf("sender stalled after node 3 came back: msgs_sent stuck at %d from %s to the end (%s), unstable %d, window_full %d",
			end, t2.Format("15:04:05.000"), last.Time.Format("15:04:05.000"), last.Get("unstable"), last.Get("window_full"))
	}
}

// reportThaw logs what the thawed receiver and the sender did after
// SIGCONT: the sender should see node 3 again.
func reportThaw(t *testing.T, r *logcheck.Run, contAt time.Time) {
	t.Helper()
	s, n3 := onlyLife(t, r, 1), onlyLife(t, r, 3)
	seen := false
	for _, p := range s.Peers {
		if p.Time.After(contAt) && p.Peer == 3 {
			t.Logf("sender: %s node 3 %v after SIGCONT", p.Event, p.Time.Sub(contAt).Round(time.Millisecond))
			seen = seen || p.Event == logs.PeerSeen
		}
	}
	if !seen {
		t.Errorf("sender did not see node 3 again after SIGCONT")
	}
	for _, p := range n3.Peers {
		if p.Time.After(contAt) {
			t.Logf("node 3: %s node %d %v after SIGCONT", p.Event, p.Peer, p.Time.Sub(contAt).Round(time.Millisecond))
		}
	}
	var skipped uint64
	for _, sk := range n3.Skips {
		skipped += sk.Count
		t.Logf("node 3: stream.skipped of node %d seqs %d..%d (%d), %v after SIGCONT",
			sk.Peer, sk.FromSeq, sk.FromSeq+sk.Count-1, sk.Count, sk.Time.Sub(contAt).Round(time.Millisecond))
	}
	st3, _ := n3.LastStats()
	st2, _ := onlyLife(t, r, 2).LastStats()
	t.Logf("node 3 after the thaw: %d stream.skipped events, %d messages skipped; at exit %s", len(n3.Skips), skipped,
		statsLine(st3, "msgs_delivered", "gaps_detected", "gaps_recovered", "nacks_sent", "skipped", "overrun", "peers"))
	t.Logf("node 2 at exit: %s", statsLine(st2, "msgs_delivered", "gaps_detected", "skipped", "overrun", "peers"))
}
