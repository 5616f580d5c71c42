package netmodel

import (
	"math/rand/v2"
	"strconv"
)

// MaxBurst bounds the mean burst length of a loss model: longer bursts
// are outages, which a cut (Partition, SetLinkLoss 1) models better.
const MaxBurst = 1000

// Gilbert is the simple Gilbert model of bursty loss, the one netem's
// "loss gemodel p r" applies: a chain of two states, good (every datagram
// passes) and bad (every datagram is lost), that moves once per datagram.
// The long-run loss is P/(P+R), the bursts of consecutive losses are
// geometric with mean 1/R and the gaps between them with mean 1/P.
type Gilbert struct {
	P float64 // P(good → bad) per datagram
	R float64 // P(bad → good) per datagram
}

// NewGilbert returns the chain whose long-run loss is loss and whose
// bursts average burst datagrams: R = 1/burst, P = loss·R/(1−loss). ok is
// false, and the caller should drop independently, where no chain is
// needed (burst ≤ 1, loss 0 or 1) or none exists (see BurstProblem).
func NewGilbert(loss, burst float64) (g Gilbert, ok bool) {
	if !(burst > 1 && loss > 0 && loss < 1) || BurstProblem(loss, burst) != "" {
		return Gilbert{}, false
	}
	r := 1 / burst
	return Gilbert{P: loss * r / (1 - loss), R: r}, true
}

// Step decides the fate of one datagram and moves the chain, whose state
// the caller keeps in *bad (false at the start: good). As in netem, the
// datagram is lost when it finds the chain in the bad state; then one
// number drawn from r moves the chain.
func (g Gilbert) Step(r *rand.Rand, bad *bool) (lost bool) {
	lost = *bad
	if lost {
		*bad = !(r.Float64() < g.R)
	} else {
		*bad = r.Float64() < g.P
	}
	return lost
}

// BurstProblem says what is wrong with a mean burst length for a
// long-run loss, "" when nothing is: the burst must be 0 or 1 (independent
// losses) or 1 to MaxBurst, and with bursts the loss can be at most
// burst/(burst+1), beyond which the gaps between bursts would average
// less than one datagram. A loss outside 0..1 is the caller's to report.
// The text starts with the burst's value, for the caller to prefix with
// the name of its setting.
func BurstProblem(loss, burst float64) string {
	b := strconv.FormatFloat(burst, 'g', -1, 64)
	if !(burst >= 0 && burst <= MaxBurst) || (burst > 0 && burst < 1) {
		return b + " is out of range (0 or 1 for independent losses, else 1 to " + strconv.Itoa(MaxBurst) + ")"
	}
	if limit := burst / (burst + 1); burst > 1 && loss > limit && loss < 1 {
		return b + " is too short for a loss of " + strconv.FormatFloat(loss, 'g', -1, 64) +
			" (bursts of " + b + " allow a loss of at most " + strconv.FormatFloat(limit, 'g', 4, 64) +
			", beyond which the gaps between bursts would be shorter than one datagram)"
	}
	return ""
}
