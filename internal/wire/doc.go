// Package wire is huddle's datagram format: one msgpack array per datagram,
//
//	[magic+version, group hash, from, incarnation, kind, view epoch, view coordinator, ...kind fields]
//
// with the kind's fields flattened into the same array (nested arrays only
// for lists). Integers are written in their shortest msgpack form; byte
// fields are msgpack bin. Kind numbers are append-only; any change to an
// existing kind's fields bumps Version.
//
// Encoding appends to a caller's buffer through one reused msgpack.Encoder
// and does not allocate. Decoding treats every datagram as hostile: lengths
// are checked against the bytes that remain, payloads alias the datagram
// (no copy), and decoding the data path's kinds into an Envelope from
// NewEnvelope never allocates (membership lists grow once, then are reused).
// Every failure wraps ErrMalformed, ErrNotHuddle or ErrUnknownKind, so the
// caller can drop and count it.
//
//	enc, dec := wire.NewEncoder(), wire.NewDecoder()
//	buf, err := enc.Append(buf[:0], &env)   // send buf
//	err = dec.Decode(datagram, in)          // in := wire.NewEnvelope(1400)
package wire
