package lan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/internal/netmodel"
)

// LossModel is what a host's ingress does to the datagrams it receives.
type LossModel struct {
	Loss   float64       // long-run fraction of datagrams dropped, 0..1
	Burst  float64       // mean length of a burst of consecutive drops; 0 or 1: independent drops
	Delay  time.Duration // added one-way delay (netem only)
	Jitter time.Duration // uniform ±jitter on Delay (netem only)
}

// MaxDelay bounds LossModel's Delay and Jitter: longer is not a LAN, and
// netem would have to queue a great many datagrams.
const MaxDelay = 10 * time.Second

// ErrNoNetem is what SetLossModel's error wraps when a model has delay or
// jitter and the loss method is not netem: only netem delays datagrams.
var ErrNoNetem = errors.New("delay and jitter need netem")

// Validate says what is wrong with the model, every problem joined, each
// naming the field, its value and what is allowed.
func (m LossModel) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("lab: loss model: "+format, args...))
	}
	if !(m.Loss >= 0 && m.Loss <= 1) {
		bad("loss %v is out of range (0 to 1)", m.Loss)
	} else if p := netmodel.BurstProblem(m.Loss, m.Burst); p != "" {
		bad("burst %s", p)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"delay", m.Delay}, {"jitter", m.Jitter}} {
		if d.v < 0 || d.v > MaxDelay {
			bad("%s %v is out of range (0 to %v)", d.name, d.v, MaxDelay)
		}
	}
	if m.Jitter > m.Delay && m.Delay >= 0 && m.Jitter <= MaxDelay {
		bad("jitter %v is more than the delay %v (at most the delay: a datagram cannot arrive before it was sent)", m.Jitter, m.Delay)
	}
	return errors.Join(errs...)
}

// bursty reports whether the model drops in bursts, which only netem and
// the nodes' built-in drop can do.
func (m LossModel) bursty() bool {
	_, ok := netmodel.NewGilbert(m.Loss, m.Burst)
	return ok
}

// String says what the model does, e.g. "5% loss in bursts of 3, delay
// 2ms ±1ms", or "no loss".
func (m LossModel) String() string {
	var parts []string
	switch {
	case m.bursty():
		parts = append(parts, percentShort(m.Loss)+" loss in bursts of "+strconv.FormatFloat(m.Burst, 'g', 4, 64))
	case m.Loss > 0:
		parts = append(parts, percentShort(m.Loss)+" loss")
	}
	if m.Delay > 0 || m.Jitter > 0 {
		d := "delay " + m.Delay.String()
		if m.Jitter > 0 {
			d += " ±" + m.Jitter.String()
		}
		parts = append(parts, d)
	}
	if len(parts) == 0 {
		return "no loss"
	}
	return strings.Join(parts, ", ")
}

// percentShort writes a fraction as a percentage of at most 4 significant
// digits: 0.05 is "5%", not "5.000000000000001%".
func percentShort(p float64) string { return strconv.FormatFloat(p*100, 'g', 4, 64) + "%" }

// netemLimit is the netem queue of a host with delay, in datagrams:
// netem's default of 1000 would drop what a busy group sends within a
// long delay, loss the model did not ask for.
const netemLimit = 100000

// netemArgs returns the arguments after "netem" that apply m (a valid
// model), nil when m does nothing (no qdisc). Independent loss is
// "loss P%", exactly as SetLoss has always set it. Bursts are netem's
// simple Gilbert model, "loss gemodel p r" with p = P(good→bad) and
// r = P(bad→good) in percent (netmodel.NewGilbert): the two left-out
// parameters default to 1-h = 100% (the bad state drops everything) and
// 1-k = 0% (the good state nothing). They are left out on purpose: older
// versions of tc passed the third to the kernel as h, not 1-h, and would
// then drop nothing in the bad state. Delay and jitter are "delay D J" in
// microseconds; netem's jitter is uniform in ±J without a distribution,
// and reorders datagrams whose delays cross.
func netemArgs(m LossModel) []string {
	var a []string
	if m.Delay > 0 {
		a = append(a, "limit", strconv.Itoa(netemLimit), "delay", micros(m.Delay))
		if m.Jitter > 0 {
			a = append(a, micros(m.Jitter))
		}
	}
	if g, ok := netmodel.NewGilbert(m.Loss, m.Burst); ok {
		a = append(a, "loss", "gemodel", percent(g.P), percent(g.R))
	} else if m.Loss > 0 {
		a = append(a, "loss", percent(m.Loss))
	}
	return a
}

func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', -1, 64) + "us"
}

// SetLossModel makes host's ingress apply m to the datagrams it receives,
// replacing the model in force; LossModel{} removes it. With netem (see
// LossMethod) everything applies in the kernel. With iptables or nft,
// independent loss is a firewall rule, but bursts are not expressible
// there (statistic and numgen draw each datagram alone): a bursty model
// goes to the built-in drop of the host's node instead, which StartNode
// arranges for every node it starts, so only huddle nodes see the bursts.
// With the built-in drop, all loss goes to the node. Delay and jitter need
// netem: without it the error wraps ErrNoNetem and nothing changes.
func (l *LAN) SetLossModel(host int, m LossModel) error {
	h, err := l.host(host)
	if err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	if err := l.chooseLoss(h); err != nil {
		return err
	}
	if (m.Delay > 0 || m.Jitter > 0) && l.lossMeth != MethodNetem {
		return fmt.Errorf("lab: %s: %s: %w (%s)", h.Name, m, ErrNoNetem, l.netemWhyNot)
	}
	old := l.models[h.Index]
	switch l.lossMeth {
	case MethodNetem:
		if err := l.netemModel(h, m); err != nil {
			return err
		}
		l.models[h.Index] = m
		return nil
	case MethodBuiltin:
		l.models[h.Index] = m
		return l.tellNode(h)
	}
	p := m.Loss
	if m.bursty() {
		p = 0 // the node's built-in drop does it
	}
	if err := l.filterLoss(h, p); err != nil {
		return err
	}
	l.models[h.Index] = m
	if old.bursty() || m.bursty() {
		return l.tellNode(h)
	}
	return nil
}

// SupportsDelay reports whether SetLossModel can delay datagrams: only
// when netem is the loss method.
func (l *LAN) SupportsDelay() bool { return l.LossMethod() == MethodNetem }

// builtinDrop returns the built-in drop that the node on h is to apply,
// as rate and burst, under the loss method in force; the caller holds
// l.mu.
func (l *LAN) builtinDrop(h Host) (rate, burst float64) {
	m := l.models[h.Index]
	switch {
	case l.lossMeth == MethodBuiltin, l.lossMeth != MethodNetem && m.bursty():
		return m.Loss, m.Burst
	}
	return 0, 0
}

// netemModel applies m with netem on the hub's port toward h (egress to
// h), or removes the qdisc when m does nothing.
func (l *LAN) netemModel(h Host, m LossModel) error {
	args := netemArgs(m)
	if args == nil {
		_, err := l.run.run("", "tc", "-n", l.hub, "qdisc", "del", "dev", h.Port, "root")
		if err != nil && !strings.Contains(err.Error(), "handle of zero") && !isNotExist(err) {
			return err
		}
		return nil
	}
	_, err := l.run.run("", append([]string{"tc", "-n", l.hub, "qdisc", "replace", "dev", h.Port, "root", "netem"}, args...)...)
	return err
}
