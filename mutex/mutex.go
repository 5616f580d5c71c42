package mutex

import (
	"errors"
	"fmt"
	"time"

	"github.com/huddle-lan/huddle/internal/logs"
)

// Options configures a lock machine (RA, or NewLock's).
type Options struct {
	// Self is this node's ID, not 0.
	Self uint64
	// Quorum is 0 (off) or the expected cluster size N. When set, the
	// lock is granted only while the installed view holds a majority of N
	// (more than N/2 members), and a holder whose view drops below that
	// majority loses the lock (an Exited event with Lost set): two sides
	// of a partition can then never both hold it. Every member of a group
	// must use the same N, and the cluster must never hold more than N
	// live nodes, or two views could both count as majorities.
	//
	// A view is not enough: a member that moved on to another view can
	// grant there while the holder still counts it in its own. So a quorum
	// also needs Lease and the times members were heard (SetView's heard,
	// and Heard), and the lock is leased:
	//
	//   - the holder keeps the lock only while it heard, within Lease, from
	//     a majority of N (itself included) of its view's members, and a
	//     request is granted only then;
	//   - a node whose view lost a member, or that had no view before,
	//     neither replies to a request nor enters for a quarantine of
	//     Lease·3/2: by then any holder that counted on it stopped hearing
	//     it (its datagrams carry another view now), and lost the lock.
	Quorum int
	// ViewLease is the quorum mode of a group whose primary component is
	// a majority of the last primary view (membership.QuorumMajority): as
	// with Quorum, but the lease counts a majority of the view's members,
	// not of N. Ricart–Agrawala only, not with Quorum.
	ViewLease bool
	// Lease is how long a member's silence may last before the holder
	// stops counting it (with a quorum; the node uses its suspect timeout).
	Lease time.Duration
	// Algorithm picks the lock NewLock makes: RicartAgrawala (empty too),
	// Central or TokenRing. Quorum mode is Ricart–Agrawala's only.
	Algorithm Algorithm
}

// ErrOptions is wrapped by the errors of Options.Validate.
var ErrOptions = errors.New("mutex: invalid options")

// Validate reports the first field of o that is out of range.
func (o Options) Validate() error {
	switch {
	case o.Self == 0:
		return fmt.Errorf("%w: Self is 0", ErrOptions)
	case o.Quorum < 0:
		return fmt.Errorf("%w: Quorum %d is negative (0 is off, else the cluster size)", ErrOptions, o.Quorum)
	case o.Quorum > 0 && o.ViewLease:
		return fmt.Errorf("%w: Quorum %d with ViewLease (one or the other)", ErrOptions, o.Quorum)
	case (o.Quorum > 0 || o.ViewLease) && o.Lease <= 0:
		return fmt.Errorf("%w: Lease %v with Quorum %d (a quorum needs a positive lease)", ErrOptions, o.Lease, o.Quorum)
	case o.Algorithm != "" && o.Algorithm != RicartAgrawala && o.Algorithm != Central && o.Algorithm != TokenRing:
		return fmt.Errorf("%w: Algorithm %q is not %q, %q or %q", ErrOptions, o.Algorithm, RicartAgrawala, Central, TokenRing)
	case (o.Quorum > 0 || o.ViewLease) && o.Algorithm != "" && o.Algorithm != RicartAgrawala:
		return fmt.Errorf("%w: Quorum %d with Algorithm %q (quorum mode is Ricart–Agrawala's)", ErrOptions, o.Quorum, o.Algorithm)
	}
	return nil
}

// Message is a mutex message to send, reliable and FIFO: Payload to the
// member To (the group's Send), or with To 0 to every other member of the
// view at once (one multicast; the sender does not deliver its own). To
// is never this node.
type Message struct {
	To      uint64
	Payload []byte
	// Total: the message goes to every member in total order, the sender
	// included (the central server's and the token ring's); To is 0.
	Total bool
}

// State is this node's relation to the lock.
type State uint8

// The states of Ricart–Agrawala 1981: RELEASED, WANTED, HELD.
const (
	Released State = iota // neither holds nor wants it
	Wanted                // requested; waits for replies (or for a quorum)
	Held                  // holds it
)

func (s State) String() string {
	switch s {
	case Released:
		return "released"
	case Wanted:
		return "wanted"
	case Held:
		return "held"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// EventKind says what happened.
type EventKind uint8

// Event kinds.
const (
	Requested EventKind = iota + 1 // this node asked for the lock (Clock)
	Acquired                       // this node holds the lock (Clock, Wait, Messages)
	// Exited is the event of a release, logged as mutex.released (the
	// name Released is the State): this node no longer holds the lock
	// (Clock, Held). It called Release or, with Lost set, the lock was
	// taken away because the view dropped below the quorum or no longer
	// holds this node.
	Exited
	Deferred  // this node deferred a member's request (Peer, Clock: that request's timestamp)
	Withdrawn // Release withdrew this node's pending request (Clock, Wait)
)

func (k EventKind) String() string {
	switch k {
	case Requested:
		return logs.MutexRequested
	case Acquired:
		return logs.MutexAcquired
	case Exited:
		return logs.MutexReleased
	case Deferred:
		return logs.MutexDeferred
	case Withdrawn:
		return logs.MutexWithdrawn
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is something the node should log (docs/logs.md).
type Event struct {
	Kind  EventKind
	View  string
	Clock uint64        // the request's Lamport timestamp (Deferred: the deferred request's)
	Wait  time.Duration // Acquired, Withdrawn: since Request
	Held  time.Duration // Exited: since Acquired
	// Messages (Acquired) is the requests sent and the replies received
	// for this entry: 2(n−1) in a view of n that did not change meanwhile.
	Messages int
	// Datagrams (Acquired) is the same, counting a request that went to
	// every other member as one multicast once: n in a view of n that did
	// not change meanwhile (repairs of lost datagrams are not counted).
	Datagrams int
	Peer      uint64 // Deferred: whose request this node deferred
	Lost      bool   // Exited: taken away (quorum lost, or out of the view), not by Release
}

// Stats are a lock machine's counters since it was made.
type Stats struct {
	Requests    uint64 // Request calls that made a request
	Acquired    uint64 // entries
	Released    uint64 // exits by Release
	Lost        uint64 // exits because the quorum or the view was lost
	Withdrawn   uint64 // requests withdrawn by Release before they were granted
	Quarantines uint64 // quorum mode: view changes that lost a member (or a first view), each starting a quarantine
	Deferred    uint64 // members' requests deferred
	Sent        Counts // messages sent, by kind
	Received    Counts // messages received that decoded, from members, by kind
	Stale       uint64 // replies to no pending request of this node's, to an older one, or from a member no longer needed
	Malformed   uint64 // payloads that do not decode
	Foreign     uint64 // messages from a node outside the view, or from this node itself
	// OutOfBound counts messages ignored for their timestamp: a request
	// more than ClockBound above this node's clock, or at MaxClock or
	// above; a reply to a timestamp above this node's clock (no request of
	// this node's has it).
	OutOfBound uint64
	// Exhausted counts requests refused because the clock reached
	// MaxClock (never honestly: see ClockBound).
	Exhausted uint64
	// Regenerated counts tokens this node saw regenerated after a view
	// change (token ring: the holder crashed or left); Retired, tokens
	// retired because a merge brought more than one.
	Regenerated uint64
	Retired     uint64
}

// Counts are message counters by kind: Ricart–Agrawala's REQUEST and
// REPLY (and the central server's REQUEST), the central server's GRANT
// and RELEASE, the token ring's WANT and PASS (its RELEASE counts as a
// Release), and the STATE messages of both at view changes.
type Counts struct {
	Request uint64
	Reply   uint64
	Grant   uint64
	Release uint64
	Want    uint64
	Pass    uint64
	State   uint64
}

// Total is the sum over the kinds.
func (c Counts) Total() uint64 {
	return c.Request + c.Reply + c.Grant + c.Release + c.Want + c.Pass + c.State
}

func (c *Counts) add(k kind) {
	switch k {
	case kindRequest, kindCRequest:
		c.Request++
	case kindReply:
		c.Reply++
	case kindGrant:
		c.Grant++
	case kindRelease, kindTRelease:
		c.Release++
	case kindWant:
		c.Want++
	case kindPass:
		c.Pass++
	case kindCState, kindTState:
		c.State++
	}
}

// Ready is what a lock machine produced since the last call to Ready: the
// messages to send, in order, and the events, in order. The caller owns
// them: a message may wait for a view change or the send window.
type Ready struct {
	Messages []Message
	Events   []Event
}
