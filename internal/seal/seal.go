// Package seal seals huddle's datagrams with a group key: AES-256-GCM over
// the whole cleartext datagram, under a cleartext header that is the
// associated data and names the key, the sender, its incarnation, a random
// salt of the sender's start and a per-start counter. It also drops what a
// key cannot vouch for: datagrams that fail to open, replays (a sliding
// window per sender start, as IPsec and DTLS keep), and cleartext.
//
// A sealed datagram:
//
//	0       0xc1: msgpack's never-used byte, so no cleartext datagram starts so
//	1       format version, 1
//	2..5    key ID: the first four bytes of the key's fingerprint
//	6..13   sender's node ID, big endian
//	14..21  sender's incarnation
//	22..29  salt: random, drawn at the sender's start
//	30..37  counter: 1, 2, 3 ... per start
//	38..    the cleartext datagram, sealed, and GCM's 16-byte tag
//
// Each sender start seals under a key of its own, derived with HKDF-SHA256
// from the group key, the sender's ID, incarnation and salt; the nonce is
// the counter. A nonce is then never used twice with one key, even when a
// node restarts with a clock that went back and so reuses an incarnation:
// its salt differs.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Layout of the header.
const (
	Marker     = 0xc1 // first byte of a sealed datagram
	Version    = 1
	HeaderSize = 38
	TagSize    = 16
	// Overhead is what sealing adds to a datagram.
	Overhead = HeaderSize + TagSize
)

// KeySize is the size of a group key's secret.
const KeySize = 32

// Errors of Open. Every one is a datagram to drop and count.
var (
	ErrNotSealed  = errors.New("seal: a datagram in the clear")
	ErrMalformed  = errors.New("seal: a malformed sealed datagram")
	ErrUnknownKey = errors.New("seal: sealed with a key this node does not hold")
	ErrOpen       = errors.New("seal: does not open with the key (forged or damaged)")
	ErrReplay     = errors.New("seal: a replay, or too old for the replay window")
)

// Key is a group key.
type Key struct {
	secret [KeySize]byte
	id     uint32 // the fingerprint's first four bytes
}

// keyText is how a key is written: a prefix, then the secret in base64.
const keyPrefix = "huddle-key-v1:"

// NewKey draws a key from the system's random source, and returns it with
// its text, as `huddle keygen` writes it to a key file.
func NewKey() (Key, string, error) {
	var s [KeySize]byte
	if _, err := io.ReadFull(rand.Reader, s[:]); err != nil {
		return Key{}, "", fmt.Errorf("seal: no randomness for a key: %w", err)
	}
	k := keyFrom(s)
	return k, k.Text(), nil
}

// ParseKey reads a key as NewKey writes it ("huddle-key-v1:" and 32 bytes
// in base64), or derives one from any other text of at least 16 bytes, a
// passphrase (HKDF-SHA256: a passphrase is only as strong as its entropy).
// Surrounding white space is ignored. The error never quotes the key.
func ParseKey(text string) (Key, error) {
	text = strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(text, keyPrefix); ok {
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(b) != KeySize {
			return Key{}, errors.New("seal: a key of huddle keygen's form whose secret is not 32 bytes of base64")
		}
		return keyFrom([KeySize]byte(b)), nil
	}
	if len(text) < 16 {
		return Key{}, fmt.Errorf("seal: a key of %d bytes is too short (at least 16 bytes, or one written by huddle keygen)", len(text))
	}
	b, err := hkdf.Key(sha256.New, []byte(text), nil, "huddle group key from a passphrase", KeySize)
	if err != nil {
		return Key{}, err
	}
	return keyFrom([KeySize]byte(b)), nil
}

func keyFrom(s [KeySize]byte) Key {
	fp := sha256.Sum256(append([]byte("huddle key fingerprint\x00"), s[:]...))
	return Key{secret: s, id: binary.BigEndian.Uint32(fp[:4])}
}

// Text is the key as a key file holds it.
func (k Key) Text() string { return keyPrefix + base64.StdEncoding.EncodeToString(k.secret[:]) }

// ID is the key's ID, carried in every datagram it seals.
func (k Key) ID() uint32 { return k.id }

// Fingerprint names the key without revealing it: the hex of its ID, as
// logs and errors show it.
func (k Key) Fingerprint() string { return Fingerprint(k.id) }

// Fingerprint formats a key ID.
func Fingerprint(id uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], id)
	return hex.EncodeToString(b[:])
}

// IsZero reports whether k is no key.
func (k Key) IsZero() bool { return k == Key{} }

// Header is a sealed datagram's cleartext header.
type Header struct {
	KeyID   uint32
	From    uint64
	Inc     uint64
	Salt    uint64
	Counter uint64
}

// ReadHeader parses a sealed datagram's header; ErrNotSealed when it does
// not start as a sealed datagram does.
func ReadHeader(b []byte) (Header, error) {
	if len(b) == 0 || b[0] != Marker {
		return Header{}, ErrNotSealed
	}
	if len(b) < Overhead || b[1] != Version {
		return Header{}, ErrMalformed
	}
	return Header{
		KeyID: binary.BigEndian.Uint32(b[2:]), From: binary.BigEndian.Uint64(b[6:]), Inc: binary.BigEndian.Uint64(b[14:]),
		Salt: binary.BigEndian.Uint64(b[22:]), Counter: binary.BigEndian.Uint64(b[30:]),
	}, nil
}

func (h Header) put(b []byte) {
	b[0], b[1] = Marker, Version
	binary.BigEndian.PutUint32(b[2:], h.KeyID)
	binary.BigEndian.PutUint64(b[6:], h.From)
	binary.BigEndian.PutUint64(b[14:], h.Inc)
	binary.BigEndian.PutUint64(b[22:], h.Salt)
	binary.BigEndian.PutUint64(b[30:], h.Counter)
}

// startKey derives the key one sender start seals with.
func startKey(k Key, from, inc, salt uint64) (cipher.AEAD, error) {
	var info [8 + 24]byte
	copy(info[:8], "huddle1\x00")
	binary.BigEndian.PutUint64(info[8:], from)
	binary.BigEndian.PutUint64(info[16:], inc)
	binary.BigEndian.PutUint64(info[24:], salt)
	sk, err := hkdf.Key(sha256.New, k.secret[:], nil, string(info[:]), KeySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(sk)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func nonce(counter uint64) [12]byte {
	var n [12]byte
	binary.BigEndian.PutUint64(n[4:], counter)
	return n
}

// equalKeys reports whether two key lists hold the same keys in order.
func equalKeys(a, b []Key) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].secret[:], b[i].secret[:]) {
			return false
		}
	}
	return true
}
