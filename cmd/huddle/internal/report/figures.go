package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
)

// Figures are what the report computes from one run. A figure the run
// holds nothing for is NaN (shown as "—", left empty in the CSV).
type Figures struct {
	Nodes      []uint64 // every node that logged, ascending
	Lives      int
	Start, End time.Time // the first and last time in the logs (and lab.json)
	// Origin names Start, from which every plot of time counts: the
	// lab's start (lab.start), or the first line of the logs.
	Origin string

	// Deliveries are the deliver events; Throughput is deliveries per
	// second at the slowest member (SlowestNode): per node, its
	// deliveries over the time between its first and last delivery,
	// summed over its lives, so that the time a node was down does not
	// count against it.
	Deliveries  int
	Throughput  float64
	SlowestNode uint64
	// PerSecond counts each node's deliveries in each second from Start.
	PerSecond map[uint64][]int

	// Latency has a sample for every deliver event matched to its send
	// (by sender, its incarnation and seq), in the order of the lives.
	Latency          []Latency
	Unmatched        int     // deliver events whose send is not in the logs
	P50, P99, MaxLat float64 // milliseconds

	// Repair is the NACK figures of each node (its lives' last
	// node.stats summed), then "all" (node 0).
	Repair                       []Repair
	NACKsPerLoss, RepairsPerLoss float64

	// Failovers are the lab.json kills, with the time until every other
	// member had installed a view without the killed nodes.
	Failovers  []Failover
	FailoverMs float64 // the mean of the complete ones

	// Rounds are the election rounds (logcheck.CheckElection).
	Rounds         []Round
	MsgsPerRound   float64 // mean of the rounds in views of two or more
	Entries        []Entry // lock entries, by time
	MsgsPerEntry   float64
	LockWaitMs     float64 // mean
	Holds          []logcheck.Interval
	DistinctViews  int
	ViewsInstalled int
	Suspicions     int
	Algorithm      string
}

// Latency is one delivery's time from its send.
type Latency struct {
	Receiver, Sender, SenderInc, Seq uint64
	Order                            string
	Ms                               float64
}

// Repair is one node's loss-repair counters (node.stats, docs/logs.md):
// a loss is a message the node found missing (gaps_detected), each
// counted once by the receiver that missed it.
type Repair struct {
	Node                                uint64 // 0: the group
	Loss, Recovered, NACKs, NACKedSeqs  int64  // gaps_detected, gaps_recovered, nacks_sent, nacked_seqs
	Repairs, RepairsRecv, InjectedDrops int64  // repairs_sent, repairs_recv, injected_drops
	NACKsPerLoss, RepairsPerLoss        float64
}

// Failover is one kill of lab.json and how long the group took to
// exclude the killed nodes.
type Failover struct {
	At    time.Time
	Nodes []uint64
	// Ms is the time from the kill until the last of the other members
	// alive then installed a view without the killed nodes; NaN when one
	// of them never did (Waiting names it).
	Ms      float64
	Waiting []uint64
}

// Round is an election round with the algorithm's counts for one
// initiator: Best (the highest starts) and Worst (the lowest starts).
type Round struct {
	*logcheck.ElectionRound
	Best, Worst float64 // NaN when the view's size or the algorithm is unknown
}

// Entry is one grant of the lock: a mutex.acquired event.
type Entry struct {
	Node     uint64
	Time     time.Time
	View     string
	Members  int // of the view; 0 unknown
	WaitMs   float64
	Messages int
}

// Expected returns 2(n−1), the messages of an entry in a view of n that
// did not change meanwhile, or NaN when n is unknown.
func (e Entry) Expected() float64 {
	if e.Members == 0 {
		return math.NaN()
	}
	return float64(2 * (e.Members - 1))
}

// compute derives the figures of a run.
func compute(r *Run) *Figures {
	lr := r.Logs
	f := &Figures{Lives: len(lr.Lives), PerSecond: map[uint64][]int{}}
	for _, l := range lr.Lives {
		if !slices.Contains(f.Nodes, l.Node) {
			f.Nodes = append(f.Nodes, l.Node)
		}
		f.Start, f.End = earliest(f.Start, l.Started), latest(f.End, l.LastTime)
		if len(l.Elections) > 0 && f.Algorithm == "" {
			f.Algorithm = l.Elections[0].Algorithm
		}
	}
	f.Origin = "the first line of the logs"
	for _, e := range r.Lab {
		switch {
		case e.Time.IsZero():
		case e.Event == labStart && (f.Start.IsZero() || !e.Time.After(f.Start)):
			f.Origin = "the start of the lab (lab.start)"
		case f.Start.IsZero() || e.Time.Before(f.Start):
			f.Origin = "the first line of lab.json"
		}
		f.Start, f.End = earliest(f.Start, e.Time), latest(f.End, e.Time)
	}
	slices.Sort(f.Nodes)
	f.deliveries(lr)
	f.latency(lr)
	f.repairs(lr)
	members := viewMembers(lr)
	f.failovers(lr, r.Lab)
	f.elections(lr)
	f.locks(lr, members)
	views := map[string]bool{}
	for _, l := range lr.Lives {
		f.ViewsInstalled += len(l.Views)
		for i := range l.Views {
			views[l.Views[i].Key()] = true
		}
		if s, ok := l.LastStats(); ok {
			f.Suspicions += int(s.Get("suspicions"))
		}
	}
	f.DistinctViews = len(views)
	return f
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// seconds returns t as seconds since the run's start.
func (f *Figures) seconds(t time.Time) float64 { return t.Sub(f.Start).Seconds() }

// span is the run's length in seconds, the x axis of every plot of time.
func (f *Figures) span() float64 { return max(f.seconds(f.End), 1) }

func (f *Figures) deliveries(lr *logcheck.Run) {
	count, span := map[uint64]int{}, map[uint64]time.Duration{}
	for _, l := range lr.Lives {
		n := len(l.Delivers)
		f.Deliveries += n
		bins := f.PerSecond[l.Node]
		for _, d := range l.Delivers {
			s := int(f.seconds(d.Time))
			if s < 0 || d.Time.IsZero() {
				continue
			}
			for len(bins) <= s {
				bins = append(bins, 0)
			}
			bins[s]++
		}
		if bins != nil {
			f.PerSecond[l.Node] = bins
		}
		if n >= 2 {
			count[l.Node] += n
			span[l.Node] += l.Delivers[n-1].Time.Sub(l.Delivers[0].Time)
		}
	}
	f.Throughput = math.NaN()
	for _, node := range f.Nodes {
		if span[node] <= 0 {
			continue
		}
		if rate := float64(count[node]) / span[node].Seconds(); math.IsNaN(f.Throughput) || rate < f.Throughput {
			f.Throughput, f.SlowestNode = rate, node
		}
	}
}

func (f *Figures) latency(lr *logcheck.Run) {
	type key struct{ node, inc, seq uint64 }
	sent := map[key]time.Time{}
	for _, l := range lr.Lives {
		for _, s := range l.Sends {
			sent[key{l.Node, l.Inc, s.Seq}] = s.Time
		}
	}
	var ms []float64
	for _, l := range lr.Lives {
		for _, d := range l.Delivers {
			t, ok := sent[key{d.From, d.FromInc, d.Seq}]
			if !ok || t.IsZero() || d.Time.IsZero() {
				f.Unmatched++
				continue
			}
			lat := Latency{Receiver: l.Node, Sender: d.From, SenderInc: d.FromInc, Seq: d.Seq, Order: d.Order,
				Ms: float64(d.Time.Sub(t)) / float64(time.Millisecond)}
			f.Latency = append(f.Latency, lat)
			ms = append(ms, lat.Ms)
		}
	}
	slices.Sort(ms)
	f.P50, f.P99, f.MaxLat = quantile(ms, 0.5), quantile(ms, 0.99), quantile(ms, 1)
}

// quantile returns the q-quantile of sorted values (nearest rank), NaN
// for none.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// ratio returns a/b, NaN when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func (f *Figures) repairs(lr *logcheck.Run) {
	by := map[uint64]*Repair{}
	all := &Repair{}
	found := false
	for _, l := range lr.Lives {
		s, ok := l.LastStats()
		if !ok {
			continue
		}
		found = true
		r := by[l.Node]
		if r == nil {
			r = &Repair{Node: l.Node}
			by[l.Node] = r
		}
		for _, x := range []*Repair{r, all} {
			x.Loss += s.Get("gaps_detected")
			x.Recovered += s.Get("gaps_recovered")
			x.NACKs += s.Get("nacks_sent")
			x.NACKedSeqs += s.Get("nacked_seqs")
			x.Repairs += s.Get("repairs_sent")
			x.RepairsRecv += s.Get("repairs_recv")
			x.InjectedDrops += s.Get("injected_drops")
		}
	}
	f.NACKsPerLoss, f.RepairsPerLoss = math.NaN(), math.NaN()
	if !found {
		return
	}
	for _, node := range f.Nodes {
		if r := by[node]; r != nil {
			f.Repair = append(f.Repair, *r)
		}
	}
	f.Repair = append(f.Repair, *all)
	for i := range f.Repair {
		r := &f.Repair[i]
		r.NACKsPerLoss, r.RepairsPerLoss = ratio(float64(r.NACKs), float64(r.Loss)), ratio(float64(r.Repairs), float64(r.Loss))
	}
	last := f.Repair[len(f.Repair)-1]
	f.NACKsPerLoss, f.RepairsPerLoss = last.NACKsPerLoss, last.RepairsPerLoss
}

// viewMembers returns the members of each view ID as the first life that
// installed it logged them.
func viewMembers(lr *logcheck.Run) map[string][]uint64 {
	m := map[string][]uint64{}
	for _, l := range lr.Lives {
		for _, v := range l.Views {
			if _, ok := m[v.ID]; !ok && v.Members != nil {
				m[v.ID] = v.Members
			}
		}
	}
	return m
}

// lifeEnd returns when a life ended: its node.stopped, else its last line.
func lifeEnd(l *logcheck.Life) time.Time {
	if !l.Stopped.IsZero() {
		return l.Stopped
	}
	return l.LastTime
}

func (f *Figures) failovers(lr *logcheck.Run, lab []LabEvent) {
	f.FailoverMs = math.NaN()
	var sum float64
	var n int
	for _, e := range lab {
		if e.Event != labFault || e.Fault != faultKill || len(e.Nodes) == 0 || e.Time.IsZero() {
			continue
		}
		fo := Failover{At: e.Time, Nodes: e.Nodes}
		var done time.Time
		for _, node := range f.Nodes {
			if slices.Contains(e.Nodes, node) {
				continue
			}
			at, alive, ok := excluded(lr.Nodes(node), e.Time, e.Nodes)
			switch {
			case !alive:
			case !ok:
				fo.Waiting = append(fo.Waiting, node)
			default:
				done = latest(done, at)
			}
		}
		fo.Ms = math.NaN()
		if len(fo.Waiting) == 0 && !done.IsZero() {
			fo.Ms = float64(done.Sub(e.Time)) / float64(time.Millisecond)
			sum += fo.Ms
			n++
		}
		f.Failovers = append(f.Failovers, fo)
	}
	if n > 0 {
		f.FailoverMs = sum / float64(n)
	}
}

// excluded returns when the node, of which lives are the lives, first
// installed a view without any of gone after at; alive says whether one
// of its lives ran at that time.
func excluded(lives []*logcheck.Life, at time.Time, gone []uint64) (t time.Time, alive, ok bool) {
	for _, l := range lives {
		if l.Started.After(at) || lifeEnd(l).Before(at) {
			continue
		}
		alive = true
		for _, v := range l.Views {
			if v.Time.Before(at) || v.Members == nil {
				continue
			}
			if !slices.ContainsFunc(v.Members, func(m uint64) bool { return slices.Contains(gone, m) }) {
				return v.Time, true, true
			}
		}
	}
	return time.Time{}, alive, false
}

// formula returns the election messages of a round for one initiator,
// the highest (best) and the lowest (worst), in a view of n: the counts
// that logcheck.ElectionRound.Formula states.
func formula(alg string, n int) (best, worst float64) {
	x := float64(n)
	switch {
	case n == 0:
	case alg == "ring":
		return 2 * x, 3*x - 1
	case alg == "bully":
		return x - 1, x*x - 1
	}
	return math.NaN(), math.NaN()
}

func (f *Figures) elections(lr *logcheck.Run) {
	res := lr.CheckElection(logcheck.ElectionOptions{})
	var sum float64
	var n int
	for _, rd := range res.Rounds {
		r := Round{ElectionRound: rd}
		r.Best, r.Worst = formula(rd.Algorithm, rd.Members)
		f.Rounds = append(f.Rounds, r)
		if rd.Members >= 2 {
			sum += float64(rd.Messages)
			n++
		}
	}
	f.MsgsPerRound = math.NaN()
	if n > 0 {
		f.MsgsPerRound = sum / float64(n)
	}
}

func (f *Figures) locks(lr *logcheck.Run, members map[string][]uint64) {
	for _, l := range lr.Lives {
		for _, e := range l.Locks {
			if e.Event != logs.MutexAcquired {
				continue
			}
			f.Entries = append(f.Entries, Entry{Node: l.Node, Time: e.Time, View: e.View, Members: len(members[e.View]),
				WaitMs: float64(e.Wait) / float64(time.Millisecond), Messages: e.Messages})
		}
	}
	slices.SortStableFunc(f.Entries, func(a, b Entry) int { return a.Time.Compare(b.Time) })
	f.MsgsPerEntry, f.LockWaitMs = math.NaN(), math.NaN()
	if len(f.Entries) > 0 {
		var msgs, wait float64
		for _, e := range f.Entries {
			msgs += float64(e.Messages)
			wait += e.WaitMs
		}
		f.MsgsPerEntry, f.LockWaitMs = msgs/float64(len(f.Entries)), wait/float64(len(f.Entries))
	}
	holds := lr.CheckMutex(logcheck.MutexOptions{}).Intervals
	f.Holds = slices.SortedStableFunc(slices.Values(holds), func(a, b logcheck.Interval) int { return cmp.Compare(a.Node, b.Node) })
}
