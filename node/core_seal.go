package node

import (
	"errors"
	"net/netip"
	"time"

	"github.com/huddle-lan/huddle/internal/seal"
	"github.com/huddle-lan/huddle/membership"
)

// sealing is the Core's part of datagram sealing: with a group key every
// datagram it sends is sealed, and every one it receives must open.
type sealing struct {
	sealer  *seal.Sealer // nil: no key, datagrams in the clear
	opened  []byte       // the cleartext of the datagram being received
	scratch []byte       // an encoded datagram before sealing
	// What tells a key mismatch apart from noise, for a node that has not
	// joined anyone: datagrams of others it could not use because of the
	// key, and whether any of another node opened.
	mismatches uint64
	foreignKey uint32 // the last key ID seen that this node does not hold (0: none seen)
	foreignAt  netip.AddrPort
	openedPeer bool
	refused    bool // this node refused itself: the group's key is another
	reported   map[netip.AddrPort]time.Time
}

// keyMismatchAfter is how many datagrams of another key (or, without a
// key, sealed ones) a node that heard nobody it could read takes as proof
// that the group it tried to join holds another key.
const keyMismatchAfter = 3

// maxReported bounds the addresses whose key trouble is reported, each at
// most once per reportEvery.
const (
	maxReported = 64
	reportEvery = time.Minute
)

// SecurityEvent is a datagram this node could not use because of the key,
// reported at most once a minute per address.
type SecurityEvent struct {
	What        string         // SecurityOtherKey, SecurityCleartext or SecuritySealed
	Addr        netip.AddrPort // where it came from
	Fingerprint string         // the sender's key's (KeyMismatch, SealedUnkeyed)
}

// openSealed opens a sealed datagram (with a key), or refuses a sealed
// one (without); it returns the cleartext datagram and the sender its
// sealed header names, or ok false when the datagram is dropped and
// counted.
func (c *Core) openSealed(now time.Time, src netip.AddrPort, data []byte) (plain []byte, h seal.Header, ok bool) {
	s := &c.seal
	if s.sealer == nil {
		if len(data) == 0 || data[0] != seal.Marker {
			return data, h, true
		}
		c.stats.SealedDropped++
		if h, err := seal.ReadHeader(data); err == nil && h.From != c.self {
			c.keyTrouble(now, src, SecurityEvent{What: SecuritySealed, Addr: src, Fingerprint: seal.Fingerprint(h.KeyID)}, h.KeyID)
		}
		return nil, h, false
	}
	if h, err := seal.ReadHeader(data); err == nil && s.sealer.Own(h) {
		c.stats.OwnEcho++ // looped back: no need to open it
		return nil, h, false
	}
	plain, h, err := s.sealer.Open(s.opened[:0], data)
	switch {
	case errors.Is(err, seal.ErrNotSealed):
		if c.dec.Decode(data, c.env) == nil { // a datagram of this group, in the clear
			c.keyTrouble(now, src, SecurityEvent{What: SecurityCleartext, Addr: src}, 0)
		}
		return nil, h, false
	case errors.Is(err, seal.ErrUnknownKey):
		if h.From != c.self {
			c.keyTrouble(now, src, SecurityEvent{What: SecurityOtherKey, Addr: src, Fingerprint: seal.Fingerprint(h.KeyID)}, h.KeyID)
		}
		return nil, h, false
	case err != nil:
		return nil, h, false // counted by the sealer: forged, damaged, replayed
	}
	s.opened = plain[:0]
	if h.From != c.self {
		s.openedPeer = true
	}
	return plain, h, true
}

// What a SecurityEvent reports.
const (
	SecurityOtherKey  = "key"       // sealed with a key this node does not hold
	SecurityCleartext = "cleartext" // a datagram of this group in the clear, which a node with a key ignores
	SecuritySealed    = "sealed"    // a sealed datagram, which a node without a key cannot open
)

// keyTrouble counts a datagram unusable because of the key, reports it
// (rate-limited per address), and remembers it for the refusal.
func (c *Core) keyTrouble(now time.Time, src netip.AddrPort, ev SecurityEvent, keyID uint32) {
	s := &c.seal
	s.mismatches++
	if ev.What != SecurityCleartext {
		s.foreignKey, s.foreignAt = keyID, src
	}
	if s.reported == nil {
		s.reported = map[netip.AddrPort]time.Time{}
	}
	if last, ok := s.reported[src]; ok && now.Sub(last) < reportEvery {
		return
	}
	if len(s.reported) >= maxReported {
		for a, at := range s.reported {
			if now.Sub(at) >= reportEvery {
				delete(s.reported, a)
			}
		}
		if len(s.reported) >= maxReported {
			return
		}
	}
	s.reported[src] = now
	c.events = append(c.events, Event{Kind: SecurityEventKind, Security: ev})
}

// checkKeyRefusal refuses this node, once its join timeout has passed,
// when it has heard no other node it could read but several datagrams of
// another key (or, without a key, sealed ones): the group it meant to join
// holds another key. It stops, as a refused node does, naming both
// fingerprints.
func (c *Core) checkKeyRefusal(now time.Time) {
	s := &c.seal
	if s.refused || s.openedPeer || s.foreignKey == 0 || s.mismatches < keyMismatchAfter || now.Sub(c.started) < c.opt.Membership.JoinTimeout {
		return
	}
	if v := c.membership.View(); len(v.Members) > 1 {
		return
	}
	s.refused = true
	ours := "none"
	if s.sealer != nil {
		ours = s.sealer.Keys()[0].Fingerprint()
	}
	c.events = append(c.events, Event{Kind: MembershipEvent, Membership: membership.Event{Kind: membership.Refused,
		Member: c.self, Setting: "key", Ours: ours, Theirs: seal.Fingerprint(s.foreignKey), Addr: s.foreignAt}})
}

// SetKeys replaces the group keys, as a key reload does: the first seals
// from now on, every one opens. A node started without a key cannot take
// one on (its datagrams are sized for the clear): it fails then.
func (c *Core) SetKeys(keys []seal.Key) error {
	if c.seal.sealer == nil {
		return errors.New("node: this node runs without a key; start it with one to seal")
	}
	return c.seal.sealer.SetKeys(keys)
}

// Keys returns the group keys in use (nil without a key).
func (c *Core) Keys() []seal.Key {
	if c.seal.sealer == nil {
		return nil
	}
	return c.seal.sealer.Keys()
}

// SealStats returns the sealer's counters (zero without a key).
func (c *Core) SealStats() seal.Stats {
	if c.seal.sealer == nil {
		return seal.Stats{}
	}
	return c.seal.sealer.Stats()
}
