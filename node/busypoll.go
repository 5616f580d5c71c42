package node

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/huddle-lan/huddle/multicast"
)

// spinner is the busy poll of the group socket (config busy_poll): for
// window after this node multicast a message in total or safe order, the
// data reader reads the socket without waiting, yielding between tries,
// instead of sleeping until the kernel wakes it, so that the sequencer's
// record is taken as it arrives. What it saves is the wake-up of a
// sleeping process, which on a virtual machine whose idle CPU halts costs
// more than the network's own trip.
type spinner struct {
	p      multicast.Poller
	window int64        // nanoseconds
	epoch  time.Time    // monotonic clock's origin
	active atomic.Int64 // the last ordered send, since epoch
	// parked is true while the reader waits in ReadBatch: an ordered
	// send then wakes it (Wake) so that it polls for the record.
	parked atomic.Bool
	wakes  atomic.Uint64 // Wake calls
	polled atomic.Uint64 // batches read while polling
	broke  atomic.Bool   // out of credit: a send does not wake the reader

	// The reader's: polling spends credit, the rest of the time earns it
	// at a third of the rate, so that polling takes at most a quarter of
	// the time however often the node sends (see account).
	credit  int64 // nanoseconds of polling left
	mark    int64 // when credit was last counted
	polling bool  // the reader polled since mark
}

// earnShare is the rate at which time not spent polling earns credit:
// a third, so that polling takes at most a quarter of the time.
const earnShare = 3

// newSpinner returns the busy poll of t, or nil when window is 0 or t
// cannot be polled.
func newSpinner(t multicast.Transport, window time.Duration) *spinner {
	p, ok := t.(multicast.Poller)
	if !ok || window <= 0 {
		return nil
	}
	if _, err := p.TryReadBatch(nil); err == multicast.ErrNoPoll {
		return nil
	}
	s := &spinner{p: p, window: int64(window), epoch: time.Now()}
	s.done() // closed until the first ordered send
	s.credit = 2 * s.window
	return s
}

func (s *spinner) now() int64 { return int64(time.Since(s.epoch)) }

// busy says whether the window after the last ordered send is still open.
func (s *spinner) busy() bool { return s.now()-s.active.Load() < s.window }

// sent opens the window at a message sent in total or safe order, and
// wakes the reader if it waits: the record is then
// polled for, not slept for. The order of the two stores and loads
// (active, then parked here; parked, then active in read) means that
// either the reader sees the window open or this sees it parked.
func (s *spinner) sent() {
	s.active.Store(s.now())
	if s.parked.Load() && !s.broke.Load() {
		s.wakes.Add(1)
		s.p.Wake()
	}
}

// done closes the window: the last ordered send has been delivered (or
// none was made).
func (s *spinner) done() { s.active.Store(-s.window) }

// read is ReadBatch with the busy poll: while the window is open it
// polls, yielding to the loop goroutine (runtime.Gosched) between tries;
// once it has closed it waits. It does not yield the CPU to other
// processes (sched_yield): on a machine whose members share two CPUs,
// that let a member that had the CPU keep it for its whole slice, and the
// p99 from send to delivery doubled.
//
// Polling takes at most a quarter of the reader's time (account): a
// node that sends ordered messages faster than their round trip would
// otherwise poll without end, hold a CPU that the members it waits for
// may need, and never let the Go scheduler look at its other sockets and
// timers (it polls the network only when nothing is runnable). At 10 000
// messages a second the p99 rose to 2.7 ms so.
func (s *spinner) read(t multicast.Transport, pkts []multicast.Packet) (int, error) {
	for {
		if s.account() && s.busy() {
			s.polling = true
			k, err := s.p.TryReadBatch(pkts)
			if k > 0 || err != nil {
				s.polled.Add(1)
				return k, err
			}
			runtime.Gosched()
			continue
		}
		s.polling = false
		s.parked.Store(true)
		if s.credit > 0 && s.busy() {
			s.parked.Store(false)
			continue
		}
		k, err := t.ReadBatch(pkts)
		s.parked.Store(false)
		if k > 0 || err != nil {
			return k, err
		}
		// Woken by a send: poll while the window is open.
	}
}

// account counts the time since the last call against the credit, and
// says whether any is left.
func (s *spinner) account() bool {
	now := s.now()
	if dt := now - s.mark; s.polling {
		s.credit -= dt
	} else {
		s.credit = min(s.credit+dt/earnShare, 2*s.window)
	}
	s.mark = now
	s.broke.Store(s.credit <= 0)
	return s.credit > 0
}

// polledCount is the busy_polled counter: batches the busy poll read
// without sleeping. 0 without busy_poll.
func (s *spinner) polledCount() uint64 {
	if s == nil {
		return 0
	}
	return s.polled.Load()
}

// wakeCount is the busy_poll_wakes counter: the reader woken by an
// ordered send to poll for its record.
func (s *spinner) wakeCount() uint64 {
	if s == nil {
		return 0
	}
	return s.wakes.Load()
}
