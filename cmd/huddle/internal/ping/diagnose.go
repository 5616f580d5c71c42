package ping

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Report is the summary of a run.
type Report struct {
	ID      string
	Local   netip.AddrPort
	Group   netip.AddrPort
	Iface   string
	Subnets []netip.Prefix
	TTL     int
	Elapsed time.Duration
	Sent    int // multicast probes sent
	Peers   []PeerReport
	Ignored Ignored
}

// OK says whether peers were heard and every one got multicast and unicast
// through both ways.
func (r Report) OK() bool {
	for _, p := range r.Peers {
		if !p.Diagnosis.OK {
			return false
		}
	}
	return len(r.Peers) > 0
}

// PeerReport is what one peer got through.
type PeerReport struct {
	ID        string
	Addr      netip.AddrPort
	Multicast PathReport // probes that went out by multicast (answered by unicast)
	Unicast   PathReport // probes that went out by unicast
	Diagnosis Diagnosis
}

// PathReport counts the probes of one path. Sent are this pinger's probes
// the peer should have answered (it was heard after they left), Answered
// those it did; Heard are the peer's probes received, of HeardOf it sent
// while heard (the span of their numbers).
type PathReport struct {
	Sent, Answered         int
	Heard, HeardOf         int
	RTTMin, RTTAvg, RTTMax time.Duration
}

// Loss is the share of the probes sent that went unanswered, 0 to 1.
func (s PathReport) Loss() float64 {
	if s.Sent == 0 {
		return 0
	}
	return float64(s.Sent-s.Answered) / float64(s.Sent)
}

// Observation is what a pinger knows of one peer at the end, as the
// diagnosis takes it. In and Out are the two directions: In, the peer's
// datagrams of that path reached here; Out, this pinger's probes of that
// path were answered, which needs the way back by unicast too (answers
// come by unicast, so MulticastOut or UnicastOut implies UnicastIn).
type Observation struct {
	Peer    string
	Addr    netip.Addr
	Port    uint16 // of huddle ping, both ways
	Group   netip.Addr
	Iface   string
	Subnets []netip.Prefix // of Iface
	TTL     int

	Heard     bool   // anything came from the peer
	Seed      bool   // given with --peer
	PeerHears int    // how many peers the peer hears, by its latest datagram
	SendErr   string // the latest error sending to it

	MulticastIn, MulticastOut bool
	UnicastIn, UnicastOut     bool
	MulticastLoss             float64 // of the probes out by multicast
	UnicastLoss               float64

	// Multicast got through for MulticastStoppedAfter, then not for the
	// last MulticastStoppedFor while unicast went on; 0 when it did not stop.
	MulticastStoppedAfter, MulticastStoppedFor time.Duration
	// The peer, heard for HeardFor, said nothing for SilentFor at the end
	// without saying it was done; 0 when it was not silent.
	SilentFor, HeardFor time.Duration
}

// Diagnosis is the verdict on one peer. Cause is one word for scripts and
// tests: ok, no-answer, silent, igmp-snooping, ttl, routing,
// multicast-blocked, multicast-one-way, firewall, partial.
type Diagnosis struct {
	OK    bool
	Cause string
	Text  string
	Notes []string // more facts: loss, a source outside the subnet, a send error
}

// String is the text and the notes, as one paragraph.
func (d Diagnosis) String() string {
	return strings.Join(append([]string{d.Text}, d.Notes...), "; ")
}

// inSubnet says whether the peer's address is in a subnet of the
// interface; with no subnets known it says yes (nothing to tell).
func (o Observation) inSubnet() bool {
	for _, p := range o.Subnets {
		if p.Contains(o.Addr) {
			return true
		}
	}
	return len(o.Subnets) == 0
}

func (o Observation) subnets() string {
	if len(o.Subnets) == 0 {
		return "none"
	}
	s := make([]string, len(o.Subnets))
	for i, p := range o.Subnets {
		s[i] = p.Masked().String()
	}
	return strings.Join(s, ", ")
}

// Diagnose names the likely cause of what did not get through to or from
// a peer, from the usual ones: a TTL of 1 toward another subnet, IGMP
// snooping without a querier, a firewall, the wrong interface.
func Diagnose(o Observation) Diagnosis {
	d := o.verdict()
	if o.SendErr != "" {
		d.Notes = append(d.Notes, "sending to it fails: "+o.SendErr)
	}
	if o.Heard && !o.inSubnet() && d.Cause != "ttl" && d.Cause != "routing" {
		d.Notes = append(d.Notes, fmt.Sprintf("its address %s is not in %s's subnet (%s): it sends from another interface or subnet; check its --iface (and this host's)",
			o.Addr, o.Iface, o.subnets()))
	}
	switch d.Cause {
	case "igmp-snooping", "multicast-blocked", "multicast-one-way", "ttl", "routing":
		d.Notes = append(d.Notes, `unicast gets through: where multicast cannot be mended, run the group with transport = "unicast" and a peers list (docs/configuration.md, "Transports")`)
	}
	if d.OK {
		for _, l := range []struct {
			path string
			loss float64
		}{{"multicast", o.MulticastLoss}, {"unicast", o.UnicastLoss}} {
			if l.loss > 0 {
				d.Notes = append(d.Notes, fmt.Sprintf("%.0f%% of the %s probes unanswered", l.loss*100, l.path))
			}
		}
	}
	return d
}

func (o Observation) verdict() Diagnosis {
	p, port := o.Peer, o.Port
	mIn, mOut, uIn, uOut := o.MulticastIn, o.MulticastOut, o.UnicastIn, o.UnicastOut
	switch {
	case !o.Heard:
		return Diagnosis{Cause: "no-answer", Text: fmt.Sprintf("%s never answered: huddle ping is not running there on port %d, a firewall drops UDP to port %d (there or here), or there is no route to it", p, port, port)}
	case o.SilentFor > 0:
		return Diagnosis{Cause: "silent", Text: fmt.Sprintf("%s went silent for the last %v after %v, without saying it was done: it was killed, or all it sends is dropped now (a firewall rule, a cable, a switch port)",
			p, o.SilentFor.Round(time.Millisecond), o.HeardFor.Round(time.Millisecond))}
	case o.MulticastStoppedAfter > 0:
		return Diagnosis{Cause: "igmp-snooping", Text: fmt.Sprintf("multicast got through for %v, then not for the last %v while unicast went on: IGMP snooping without a querier (a snooping switch forgets the group's members a few minutes after the last IGMP query; enable an IGMP querier on the VLAN, or turn snooping off), or a firewall rule added meanwhile",
			o.MulticastStoppedAfter.Round(time.Millisecond), o.MulticastStoppedFor.Round(time.Millisecond))}
	case mIn && mOut && uIn && uOut:
		return Diagnosis{OK: true, Cause: "ok", Text: "multicast and unicast get through both ways"}
	case uIn && uOut && !mIn && !mOut:
		switch {
		case !o.inSubnet() && o.TTL <= 1:
			return Diagnosis{Cause: "ttl", Text: fmt.Sprintf("unicast gets through, multicast does not: %s is not in %s's subnet (%s) and the TTL is 1, so multicast stays on the link; put the machines on one link (VLAN), or route multicast between the subnets (PIM, an IGMP proxy) and raise --ttl (the group's ttl) above the number of routers",
				o.Addr, o.Iface, o.subnets())}
		case !o.inSubnet():
			return Diagnosis{Cause: "routing", Text: fmt.Sprintf("unicast gets through, multicast does not: %s is in another subnet than %s (%s), and multicast between subnets needs a multicast router (PIM, an IGMP proxy) and a TTL (now %d) above the number of routers",
				o.Addr, o.Iface, o.subnets(), o.TTL)}
		}
		return Diagnosis{Cause: "multicast-blocked", Text: fmt.Sprintf("unicast gets through both ways, multicast in neither: IGMP snooping without a querier (a snooping switch forwards %s only to ports it heard IGMP reports from, which it forgets without a querier; enable an IGMP querier on the VLAN, or turn snooping off), or a switch or firewall dropping multicast",
			o.Group)}
	case uIn && uOut && mIn && !mOut:
		return Diagnosis{Cause: "multicast-one-way", Text: fmt.Sprintf("multicast gets through from %s to here, not from here to %s: the switch does not forward %s to %s's port (IGMP snooping without a querier), or a firewall on %s drops multicast to %s port %d",
			p, p, o.Group, p, p, o.Group, port)}
	case uIn && uOut && !mIn && mOut:
		return Diagnosis{Cause: "multicast-one-way", Text: fmt.Sprintf("multicast gets through from here to %s, not from %s to here: the switch does not forward %s to this host's port (IGMP snooping without a querier), a firewall here drops multicast to %s port %d, or %s sends its multicast out of another interface (its --iface)",
			p, p, o.Group, o.Group, port, p)}
	case uIn && !uOut && mOut:
		return Diagnosis{Cause: "firewall", Text: fmt.Sprintf("unicast from here does not reach %s though multicast does: a firewall on %s (or between) drops unicast to port %d", p, p, port)}
	case uIn && !uOut && !mOut:
		return Diagnosis{Cause: "firewall", Text: fmt.Sprintf("%s's datagrams reach here, but nothing from here reaches %s: a firewall on %s (or between) drops UDP from this host to port %d", p, p, p, port)}
	case !uIn && mIn && o.PeerHears == 0:
		return Diagnosis{Cause: "firewall", Text: fmt.Sprintf("only %s's multicast arrives, nothing by unicast, and %s hears no one: a firewall on %s drops what comes in (UDP port %d), or it listens on another interface than it sends on", p, p, p, port)}
	case !uIn && mIn:
		return Diagnosis{Cause: "firewall", Text: fmt.Sprintf("only %s's multicast arrives, nothing by unicast (no answers, no unicast probes): a firewall here drops unicast from %s to port %d, or a firewall there drops what this host sends", p, p, port)}
	}
	return Diagnosis{Cause: "partial", Text: fmt.Sprintf("only some ways get through (multicast in %s, out %s; unicast in %s, out %s): look for a firewall on either host",
		yes(mIn), yes(mOut), yes(uIn), yes(uOut))}
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
