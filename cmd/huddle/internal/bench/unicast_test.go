package bench

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// BenchmarkUnicast measures the unicast transport (transport = "unicast":
// every datagram the group would multicast goes once to each member it
// hears, in sendmmsg batches), in one table:
//
//   - fanout3, fanout8: 3 and 8 hosts, host 1 sending to the others. The
//     ceiling is the raw unicast fan-out: the test binary as helper blasts
//     1000-byte datagrams from host 1 to a sink on each other host's
//     unicast address, every datagram once per sink, with sendmmsg batches
//     of 64 datagrams through huddle's own unicast socket layer
//     (multicast.OpenUnicast, whose WriteBatch gives each message of a
//     sendmmsg its address, as huddle's does); the sinks bind their host's
//     address as a unicast node binds its data port. The loss-free rate is
//     found as for the multicast ceiling (lossFree); it is reported as
//     datagrams/s on the wire and as messages/s, what each sink gets
//     (datagrams/s ÷ (n-1)). Then huddle, `--transport unicast`, host 1
//     sending N 1000-byte messages as fast as its window allows, as
//     BenchmarkLAN's lossless: the slowest receiver's msgs/s as a ratio
//     to the ceiling's messages/s of a raw run made just before it (the
//     median of the runs' ratios). Target ≥ 80 %. For comparison, each
//     iteration then does the same with multicast: the multicast blaster's
//     ceiling (lossFree) and huddle's multicast transport just after it
//     (an info row). The details give the CPU per message of every
//     process together, huddle's and the raw runs': on two cores the
//     receivers' CPU is taken from the sender's.
//   - loss5paced: 5 hosts, the lab's 5 % random loss on each receiver's
//     input, the sender paced at 5000 msg/s, unicast: NACKs and repairs
//     per datagram a receiver lost, counted as BenchmarkLAN counts them
//     (receiverLosses, addRepairs: nacks_sent and repairs_sent, which
//     count each NACK and repair once however many destinations it goes
//     to; the detail gives the datagrams on the wire). Targets: ≤ 1.05
//     NACKs per receiver that lost it, ≤ 1.1 repairs per loss (one, give
//     or take). Each iteration then runs the same with multicast, for
//     comparison (an info row).
//   - crash4, join4: a group of 4 (the LAN profile, 100 msg/s each, as
//     BenchmarkMembership), multicast and unicast runs alternating in
//     one sitting: SIGKILL of a member → the last survivor's view without
//     it (target ≤ 600 ms), and a 5th node's node.started → a view with
//     it at every member (target ≤ 200 ms), with BenchmarkMembership's
//     code (removalRun, join).
//
// Every huddle node gets `--transport unicast` (the lab's runner adds
// --peers with every host of the LAN), or nothing for the multicast runs.
func BenchmarkUnicast(b *testing.B) {
	s := newSuite(b)
	for _, n := range uniSizes {
		s.run(fmt.Sprintf("fanout%d", n), func(sc *scenario) { s.benchFanout(sc, n) })
	}
	s.run("loss5paced", s.benchUnicastLoss)
	s.run("crash4", func(sc *scenario) { benchTransports(sc, "crash") })
	s.run("join4", func(sc *scenario) { benchTransports(sc, "join") })
	method, veth := "", "?"
	for _, n := range append([]int{uniLossHosts}, uniSizes...) {
		if l := machine.lans[n]; l != nil {
			method, veth = l.LossMethod(), mtu(l)
			break
		}
	}
	s.print("huddle unicast transport benchmark", fmt.Sprintf("virtual LANs of %d, %d and %d hosts (veth MTU %s, loss by %q), --loopback=false, "+
		"1000-byte messages; --profile local for throughput and loss, --profile lan and %d msg/s per node for crash and join",
		uniSizes[0], uniSizes[1], uniLossHosts, veth, method, memRate), nil)
}

var uniSizes = []int{3, 8} // the group sizes of the fan-out scenarios

const (
	uniTarget     = 0.80 // huddle unicast FIFO / the raw fan-out's messages/s
	uniLossHosts  = 5    // loss5paced: 1 sender, 4 receivers, as BenchmarkLAN's
	uniNackMax    = "1.05"
	uniRepairMax  = "1.1"
	uniMembers    = 4 // crash4 and join4: the group
	uniJoiner     = 5 // join4's 5th node, on a LAN of 5 hosts
	uniMemberHost = 5 // hosts of crash4's and join4's LAN
)

// unicastArgs are the flags that make a node a unicast one.
var unicastArgs = []string{"--transport", "unicast"}

// pairRun is a huddle run and the raw ceiling measured just before it.
type pairRun struct {
	raw   *rawRun
	r     *multicastRun
	ratio float64 // huddle's msgs/s at its slowest receiver / the raw's messages/s (its slowest sink's)
}

// fanoutRun is one iteration of a fan-out scenario: the unicast pair, and
// the multicast pair for comparison.
type fanoutRun struct{ uni, multi pairRun }

// benchFanout: from host 1 to n-1 hosts, the raw unicast fan-out and
// huddle unicast just after it, then the raw multicast ceiling and huddle
// multicast just after it, for comparison; sc.N times. The ceiling's row
// is the raw run with the median rate, huddle's the median ratio.
func (s *suite) benchFanout(sc *scenario, n int) {
	l := sc.lan(n)
	receivers := hosts(2, n)
	var counts [2]int // unicast, multicast: messages per huddle run, from the first raw run
	pair := func(k int, unicast bool, args []string) pairRun {
		raw := lossFreeOf(sc, l, 1, receivers, msgSize, unicast)
		if counts[k] == 0 {
			counts[k] = countFor(raw.ceilingRate(), huddleFor)
		}
		r := runMulticast(sc, n, multicastSpec{sender: 1, receivers: receivers, count: counts[k], countDrops: true, args: args})
		return pairRun{raw, r, slowestRate(r) / max(raw.ceilingRate(), 1)}
	}
	runs := repeat(sc.N, func(int) fanoutRun { return fanoutRun{pair(0, true, unicastArgs), pair(1, false, nil)} })
	uni := func(f fanoutRun) pairRun { return f.uni }
	multi := func(f fanoutRun) pairRun { return f.multi }

	rawMed, _ := medianBy(runs, func(f fanoutRun) float64 { return f.uni.raw.ceilingRate() })
	ceil := rawMed.uni.raw.ceilingRate()
	dests := float64(n - 1)
	s.baseline[sc.name] = ceil
	var ceilings []string
	for _, f := range runs {
		ceilings = append(ceilings, rate(f.uni.raw.ceilingRate()*dests, "dgram/s"))
	}
	sc.add(fmt.Sprintf("ceiling: raw unicast fan-out 1000 B to %d receivers, loss-free", n-1),
		rate(ceil*dests, "dgram/s")+" = "+rate(ceil, "msg/s"), "-", "info",
		fmt.Sprintf("datagrams/s on the wire = messages/s (each receiver's) × %d; runs: %s; the median run: %s",
			n-1, strings.Join(ceilings, ", "), rawDetail(rawMed.uni.raw, len(runs))))

	p, ratios := medianPair(runs, uni)
	tp := slowestRate(p.r)
	sc.add("huddle unicast FIFO, 1 sender: msgs/s at slowest / ceiling's msg/s", pct(p.ratio)+" ("+rate(tp, "msg/s")+")",
		fmt.Sprintf("≥ %.0f %%", 100*uniTarget), verdict(p.ratio >= uniTarget),
		fmt.Sprintf("median of %d ratios (%s), each to a raw run just before (this one's %s = %s); %s; %s; %s",
			len(runs), ratios, rate(p.raw.ceilingRate(), "msg/s"), rate(p.raw.ceilingRate()*dests, "dgram/s"),
			unicastDetail(p.r, p.raw), cpuPerMessage(p), multicastDetail(p.r, len(runs))))
	s.addDelivery(sc, p.r)

	m, mratios := medianPair(runs, multi)
	mtp := slowestRate(m.r)
	sc.add("  for comparison, multicast: huddle FIFO / raw multicast ceiling", pct(m.ratio)+" ("+rate(mtp, "msg/s")+")", "-", "info",
		fmt.Sprintf("the same with the multicast transport and the multicast blaster, each iteration right after the unicast pair: "+
			"median of %d ratios (%s), this one's ceiling %s; %s; everything delivered: %s; %s",
			len(runs), mratios, rate(m.raw.ceilingRate(), "dgram/s"), cpuPerMessage(m), okWord(s.deliveredOK(m.r)), multicastDetail(m.r, len(runs))))
	sc.metric(ceil*dests, "dgram/s")
	sc.metric(ceil, "ceiling-msg/s")
	sc.metric(tp, "msg/s")
	sc.metric(100*p.ratio, "%ceiling")
	sc.metric(100*m.ratio, "%ceiling-multicast")
}

// medianPair is the pair of runs with the median ratio, and the ratios
// of them all in the order run.
func medianPair(runs []fanoutRun, of func(fanoutRun) pairRun) (pairRun, string) {
	var ps []pairRun
	var ratios []string
	for _, f := range runs {
		ps = append(ps, of(f))
		ratios = append(ratios, pct(of(f).ratio))
	}
	m, _ := medianBy(ps, func(p pairRun) float64 { return p.ratio })
	return m, strings.Join(ratios, ", ")
}

// deliveredOK reports whether every receiver of r delivered everything.
func (s *suite) deliveredOK(r *multicastRun) bool { ok, _ := s.deliveredAll(r); return ok }

// unicastDetail is what a unicast run's sender put on the wire and what
// it cost: its destinations, the data datagrams times them, its CPU per
// datagram on the wire, against the raw blaster's when raw is not nil.
func unicastDetail(r *multicastRun, raw *rawRun) string {
	f := &r.sender.final
	var dests uint64
	for _, st := range r.sender.periodic {
		dests = max(dests, st.get("unicast_dests"))
	}
	wire := f.get("data_datagrams") * dests
	s := fmt.Sprintf("unicast: sender's unicast_dests %d (the most in its periodic stats), %d data datagrams × %d = %d on the wire, "+
		"sessions_sent %d, unicast_probes %d; sender CPU %.2f µs per data datagram on the wire",
		dests, f.get("data_datagrams"), dests, wire, f.get("sessions_sent"), f.get("unicast_probes"), usPer(r.sender.cpuSec, int64(wire)))
	if raw != nil && raw.blast.Dests > 0 {
		s += fmt.Sprintf(" (raw blaster %.2f µs)", usPer(raw.blast.CPU, raw.blast.Sent*int64(raw.blast.Dests)))
	}
	return s
}

// cpuPerMessage is what a message cost the machine in a pair's two runs,
// every process together (their CPU time over their whole life, divided
// by the messages sent): on two cores the receivers' CPU is taken from
// the sender's.
func cpuPerMessage(p pairRun) string {
	var rcpu float64
	for _, m := range p.r.receivers {
		rcpu += m.cpuSec
	}
	var sinkUs float64
	for _, k := range p.raw.sinks {
		sinkUs += usPer(k.CPU, k.Got)
	}
	n := int64(p.r.spec.count)
	blastUs := usPer(p.raw.blast.CPU, p.raw.blast.Sent)
	return fmt.Sprintf("CPU per message, every process together: huddle %.1f µs (sender %.1f, receivers %.1f), raw %.1f µs (blaster %.1f, sinks %.1f)",
		usPer(p.r.sender.cpuSec+rcpu, n), usPer(p.r.sender.cpuSec, n), usPer(rcpu, n), blastUs+sinkUs, blastUs, sinkUs)
}

// benchUnicastLoss: 5 % loss on each of 4 receivers' input, the sender
// paced at pacedRate, unicast; and for comparison the same with
// multicast right after it in each iteration.
func (s *suite) benchUnicastLoss(sc *scenario) {
	l := sc.lan(uniLossHosts)
	receivers := hosts(2, uniLossHosts)
	count := countFor(pacedRate, huddleFor)
	run := func(args []string) *multicastRun {
		defer setLoss(sc, l, receivers, lossRate)()
		return runMulticast(sc, uniLossHosts, multicastSpec{sender: 1, receivers: receivers, count: count, countDrops: true,
			rate: pacedRate, args: args})
	}
	type both struct{ uni, multi *multicastRun }
	rs := repeat(sc.N, func(int) both { return both{run(unicastArgs), run(nil)} })
	perLoss := func(r *multicastRun) float64 { lost, _ := receiverLosses(r); return ratioOf(sumNacks(r), lost) }
	pick := func(of func(both) *multicastRun) *multicastRun {
		var ms []*multicastRun
		for _, b := range rs {
			ms = append(ms, of(b))
		}
		m, _ := medianBy(ms, perLoss)
		return m
	}
	r := pick(func(b both) *multicastRun { return b.uni })
	runs := len(rs)
	tp := slowestRate(r)
	dests := uniLossHosts - 1
	directed := sumOf(r.nodes(), func(m *member) uint64 { return m.final.get("unicast_directed") })
	sc.add(fmt.Sprintf("unicast, paced at %d msg/s, %.0f %% loss/receiver: msgs/s", pacedRate, 100*lossRate), rate(tp, "msg/s"), "-", "info",
		fmt.Sprintf("median of %d by NACKs per loss; %d NACKs and %d repairs; datagrams sent to one node alone (unicast_directed: "+
			"NACKs to their source, repairs to the member that asked, early acknowledgements to their source) %d, the rest to the %d other members; "+
			"duplicates at the receivers %s; %s; %s",
			runs, sumNacks(r), sumRepairs(r), directed, dests, perNode(r.receivers, "duplicates"),
			unicastDetail(r, nil), multicastDetail(r, runs)))
	s.addDelivery(sc, r)
	lost, lostDetail := receiverLosses(r)
	nr, rr := s.addRepairs(sc, r, lost, uniNackMax, uniRepairMax, lostDetail)
	p99 := maxRecovery(r)
	sc.add("p99 recovery latency, max over receivers", fmt.Sprintf("%.2f ms", float64(p99)/1000), "-", "info",
		"BenchmarkLAN's multicast target at this rate is ≤ 5 ms; recovery p50/p99/max µs per receiver: "+recoveryDetail(r))

	m := pick(func(b both) *multicastRun { return b.multi })
	mlost, mlostDetail := receiverLosses(m)
	sc.add("  for comparison, multicast: NACKs / repairs per loss, p99 recovery",
		fmt.Sprintf("%s / %s, %.2f ms", num(ratioOf(sumNacks(m), mlost)), num(ratioOf(sumRepairs(m), mlost)), float64(maxRecovery(m))/1000), "-", "info",
		fmt.Sprintf("the same with the multicast transport, each iteration right after the unicast run; median of %d by NACKs per loss; "+
			"%d NACKs (%s), %d repairs (sender %d) / %d lost: %s; everything delivered: %s; slowest receiver %s; recovery p50/p99/max µs per receiver: %s",
			runs, sumNacks(m), perNode(m.receivers, "nacks_sent"), sumRepairs(m), m.sender.final.get("repairs_sent"), mlost, mlostDetail,
			okWord(s.deliveredOK(m)), rate(slowestRate(m), "msg/s"), recoveryDetail(m)))
	sc.metric(tp, "msg/s")
	sc.metric(nr, "nacks/loss")
	sc.metric(rr, "repairs/loss")
	sc.metric(float64(p99), "p99-µs")
}

// benchTransports: crash or join in a group of 4, a multicast and a
// unicast group in turn in each iteration, so that both meet the same
// machine.
func benchTransports(sc *scenario, what string) {
	all := hosts(1, uniMembers)
	transports := []struct {
		name string
		args []string
	}{{"multicast", nil}, {"unicast", unicastArgs}}
	rs := make([][]timing, len(transports))
	for i := range max(sc.N, 1) {
		for k, t := range transports {
			rs[k] = append(rs[k], timingOf(sc, uniMemberHost, all, memRate, t.args, i, func(i int, g *group) timing {
				if what == "crash" {
					return removalRun(sc, g, crashSpec, i, all)
				}
				return join(sc, g, i, all, uniJoiner)
			}))
		}
	}
	for k, t := range transports {
		if what == "crash" {
			reportAs(sc, fmt.Sprintf("%s: SIGKILL a member of %d → last survivor's view without it", t.name, uniMembers), 600, rs[k], "", "ms-"+t.name)
			continue
		}
		v := reportAs(sc, fmt.Sprintf("%s: 5th node's node.started → view with it at every member", t.name), 200, rs[k],
			"the same from the lab's Start call (adds the process start)", "ms-"+t.name)
		if !math.IsNaN(v) {
			sc.metric(v, "ms-from-exec-"+t.name)
		}
	}
}

// TestUnicastBlasterArgs: the blaster takes a group or a list of unicast
// destinations, and refuses a list with a group in it (no network).
func TestUnicastBlasterArgs(t *testing.T) {
	if _, _, err := openBlaster("10.77.0.2:7000,239.1.2.3:7000", "lo", 64, true); err == nil {
		t.Error("a list with a multicast address was accepted")
	}
	if _, _, err := openBlaster("10.77.0.2:7000,nonsense", "lo", 64, true); err == nil {
		t.Error("a list with a bad address was accepted")
	}
}
