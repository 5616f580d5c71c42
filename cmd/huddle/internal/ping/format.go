package ping

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// label names a peer in the lines: its ID and its address, or the address
// alone for a peer given with --peer and never heard.
func label(id, addr string) string {
	if id == addr {
		return addr
	}
	return id + " (" + addr + ")"
}

// String is the event's line, in the manner of ping and omping:
//
//	h2 (10.77.0.2) multicast: seq=5 time=0.210 ms
func (e Event) String() string {
	who := label(e.Peer, e.Addr.Addr().String())
	switch e.Kind {
	case EventJoined:
		return fmt.Sprintf("%s joined (heard by %v)", who, e.Path)
	case EventAnswer:
		late := ""
		if e.Late {
			late = " (late)"
		}
		return fmt.Sprintf("%s %v: seq=%d time=%s ms%s", who, e.Path, e.Seq, ms(e.RTT), late)
	case EventLost:
		return fmt.Sprintf("%s %v: seq=%d no answer", who, e.Path, e.Seq)
	case EventSilent:
		return fmt.Sprintf("%s silent for %d intervals", who, silentAfter)
	case EventDone:
		return fmt.Sprintf("%s done (sent its last probe)", who)
	}
	return fmt.Sprintf("%s %s", who, e.Kind)
}

// ms formats d in milliseconds with three decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond))
}

func msf(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// WriteText writes the report as a table: per peer, a line per path and
// the diagnosis under them; then what was ignored, and the verdict.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\n--- huddle ping %s from %v on %s (%s) to %v, ttl %d: %d probes in %v ---\n",
		r.ID, r.Local.Addr(), r.Iface, Observation{Subnets: r.Subnets}.subnets(), r.Group, r.TTL, r.Sent, r.Elapsed.Round(time.Millisecond))
	if len(r.Peers) == 0 {
		fmt.Fprintln(w, r.NoPeers())
		return
	}
	// The numbers align right; the peers, padded here, left.
	width := len("peer")
	for _, p := range r.Peers {
		width = max(width, len(label(p.ID, p.Addr.Addr().String())))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tpath\tsent\tanswered\tloss\theard\trtt min/avg/max ms\t\n", width, "peer")
	for _, p := range r.Peers {
		who := fmt.Sprintf("%-*s", width, label(p.ID, p.Addr.Addr().String()))
		for i, s := range []PathReport{p.Multicast, p.Unicast} {
			path := Path(i)
			rtt := "-"
			if s.Answered > 0 {
				rtt = ms(s.RTTMin) + "/" + ms(s.RTTAvg) + "/" + ms(s.RTTMax)
			}
			loss := "-"
			if s.Sent > 0 {
				loss = fmt.Sprintf("%.0f%%", s.Loss()*100)
			}
			fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%s\t%d/%d\t%s\t\n", who, path, s.Sent, s.Answered, loss, s.Heard, s.HeardOf, rtt)
			who = fmt.Sprintf("%-*s", width, "")
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	bad := 0
	for _, p := range r.Peers {
		if !p.Diagnosis.OK {
			bad++
		}
		fmt.Fprintf(w, "%s: %s: %s\n", label(p.ID, p.Addr.Addr().String()), p.Diagnosis.Cause, p.Diagnosis)
	}
	if n := r.Ignored.Total(); n > 0 {
		i := r.Ignored
		fmt.Fprintf(w, "ignored %d datagrams: %d malformed, %d of another version, %d own, %d over the peer limit, %d bad answers, %d by the wrong path\n",
			n, i.Malformed, i.OtherVersion, i.Own, i.PeerLimit, i.BadEcho, i.Misdirected)
	}
	if bad == 0 {
		fmt.Fprintf(w, "all %d peers: multicast and unicast get through both ways\n", len(r.Peers))
	} else {
		fmt.Fprintf(w, "%d of %d peers: not everything gets through\n", bad, len(r.Peers))
	}
}

// NoPeers says that no peer was heard, and what to check.
func (r Report) NoPeers() string {
	port := r.Group.Port()
	return strings.Join([]string{
		fmt.Sprintf("no peer was heard in %v. Check:", r.Elapsed.Round(time.Millisecond)),
		fmt.Sprintf("  - huddle ping runs on the other machines at the same time, with the same --addr (%v)", r.Group),
		fmt.Sprintf("  - the interface: the others must be on %s's link (%s); choose another with --iface",
			r.Iface, Observation{Subnets: r.Subnets}.subnets()),
		fmt.Sprintf("  - a firewall, here or there, dropping UDP to port %d or multicast to %v", port, r.Group.Addr()),
		"  - IGMP snooping without a querier on the switch (multicast is dropped; give a peer's address with --peer to test unicast)",
		fmt.Sprintf("  - the TTL (%d): with 1, peers behind a router are out of reach by multicast; --peer reaches them by unicast", r.TTL),
	}, "\n")
}

// JSON objects, one per line: the events as they happen, then a summary
// per peer and the end.

// EventJSON is an event as JSON.
type EventJSON struct {
	Event string  `json:"event"`
	AtMS  float64 `json:"at_ms"`
	Peer  string  `json:"peer"`
	Addr  string  `json:"addr"`
	Path  string  `json:"path,omitempty"`
	Seq   uint32  `json:"seq,omitempty"`
	RTTMS float64 `json:"rtt_ms,omitempty"`
	Late  bool    `json:"late,omitempty"`
}

// JSON returns e as JSON.
func (e Event) JSON() EventJSON {
	j := EventJSON{Event: string(e.Kind), AtMS: msf(e.At), Peer: e.Peer, Addr: e.Addr.String(), Seq: e.Seq, RTTMS: msf(e.RTT), Late: e.Late}
	if e.Kind == EventJoined || e.Kind == EventAnswer || e.Kind == EventLost {
		j.Path = e.Path.String()
	}
	return j
}

// PathJSON is a PathReport as JSON.
type PathJSON struct {
	Sent     int     `json:"sent"`
	Answered int     `json:"answered"`
	LossPct  float64 `json:"loss_pct"`
	Heard    int     `json:"heard"`
	HeardOf  int     `json:"heard_of"`
	RTTMinMS float64 `json:"rtt_min_ms"`
	RTTAvgMS float64 `json:"rtt_avg_ms"`
	RTTMaxMS float64 `json:"rtt_max_ms"`
}

// SummaryJSON is a PeerReport as JSON.
type SummaryJSON struct {
	Event     string   `json:"event"` // "summary"
	Peer      string   `json:"peer"`
	Addr      string   `json:"addr"`
	Multicast PathJSON `json:"multicast"`
	Unicast   PathJSON `json:"unicast"`
	OK        bool     `json:"ok"`
	Cause     string   `json:"cause"`
	Diagnosis string   `json:"diagnosis"`
}

// EndJSON is the last line of a run.
type EndJSON struct {
	Event     string  `json:"event"` // "end"
	ID        string  `json:"id"`
	Local     string  `json:"local"`
	Group     string  `json:"group"`
	Iface     string  `json:"iface"`
	TTL       int     `json:"ttl"`
	ElapsedMS float64 `json:"elapsed_ms"`
	Sent      int     `json:"sent"`
	Peers     int     `json:"peers"`
	OK        bool    `json:"ok"`
	Ignored   Ignored `json:"ignored"`
	Problem   string  `json:"problem,omitempty"` // when no peer was heard
}

// JSON returns the report as JSON objects: a summary per peer, then the end.
func (r Report) JSON() []any {
	var out []any
	for _, p := range r.Peers {
		out = append(out, SummaryJSON{Event: "summary", Peer: p.ID, Addr: p.Addr.String(),
			Multicast: p.Multicast.json(), Unicast: p.Unicast.json(),
			OK: p.Diagnosis.OK, Cause: p.Diagnosis.Cause, Diagnosis: p.Diagnosis.String()})
	}
	end := EndJSON{Event: "end", ID: r.ID, Local: r.Local.String(), Group: r.Group.String(), Iface: r.Iface, TTL: r.TTL,
		ElapsedMS: msf(r.Elapsed), Sent: r.Sent, Peers: len(r.Peers), OK: r.OK(), Ignored: r.Ignored}
	if len(r.Peers) == 0 {
		end.Problem = r.NoPeers()
	}
	return append(out, end)
}

func (s PathReport) json() PathJSON {
	return PathJSON{Sent: s.Sent, Answered: s.Answered, LossPct: s.Loss() * 100, Heard: s.Heard, HeardOf: s.HeardOf,
		RTTMinMS: msf(s.RTTMin), RTTAvgMS: msf(s.RTTAvg), RTTMaxMS: msf(s.RTTMax)}
}
