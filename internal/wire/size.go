package wire

import "math"

// Exact encoded sizes, so that senders can pack datagrams to the byte
// without encoding twice. TestSizes checks them against the encoder.

// uintSize is the size of v as a compact msgpack unsigned int.
func uintSize(v uint64) int {
	switch {
	case v <= math.MaxInt8:
		return 1
	case v <= math.MaxUint8:
		return 2
	case v <= math.MaxUint16:
		return 3
	case v <= math.MaxUint32:
		return 5
	}
	return 9
}

// arraySize is the size of an array header for n elements.
func arraySize(n int) int {
	switch {
	case n < 16:
		return 1
	case n <= math.MaxUint16:
		return 3
	}
	return 5
}

// binSize is the size of a bin field of n bytes.
func binSize(n int) int {
	switch {
	case n < 256:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	}
	return 5 + n
}

// nameSize is the size of a short byte field written by Encoder.name.
func nameSize(n int) int {
	if n == 0 {
		return 1
	}
	return binSize(n)
}

// HeaderSize is the encoded size of h with the array header of an envelope
// whose body has bodyFields fields.
func HeaderSize(h *Header, bodyFields int) int {
	return arraySize(HeaderFields+bodyFields) + uintSize(MagicVersion) + uintSize(uint64(h.Group)) +
		uintSize(h.From) + uintSize(h.Inc) + uintSize(uint64(h.Kind)) + uintSize(h.View.Epoch) + uintSize(h.View.Coord)
}

// DataSize is the encoded size of d's fields, without an array header.
func DataSize(d *Data) int {
	return uintSize(d.Seq) + uintSize(uint64(d.Order)) + uintSize(d.Dest) + nameSize(len(d.Service)) +
		uintSize(uint64(d.FragIndex)) + uintSize(uint64(d.FragCount)) + binSize(len(d.Payload))
}

// Sizes of the envelopes that carry data, for packing.
const (
	// RepairExtra bounds what a repair adds to a data message's size: the
	// source and its incarnation, at most 9 bytes each.
	RepairExtra = 18
	// MaxHeader bounds HeaderSize for any header and body.
	MaxHeader = 5 + 3 + 5 + 9 + 9 + 2 + 9 + 9
	// BatchEntryExtra is what each message adds in a batch besides its
	// fields: its own array header.
	BatchEntryExtra = 1
)

// BatchSize is the exact size of a KindBatch envelope with header h whose
// entries' DataSize values sum to fields over n entries.
func BatchSize(h *Header, n, fields int) int {
	return HeaderSize(h, 1) + arraySize(n) + n*BatchEntryExtra + fields
}
