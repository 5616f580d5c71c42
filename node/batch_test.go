package node

import "testing"

// TestBatchLen: a reader's buffers stay within poolSize·batchBytes
// whatever the datagram size, and datagrams of a usual size are read 64
// at a time.
func TestBatchLen(t *testing.T) {
	for _, size := range []int{512, 1400, 8972, 65000, 65507} {
		n := batchLen(size)
		if bytes := poolSize * n * (size + 1); n > 4 && bytes > poolSize*batchBytes {
			t.Errorf("datagram_size %d: %d per batch, %d bytes of buffers, over %d", size, n, bytes, poolSize*batchBytes)
		}
		if n < 4 || n > batchSize {
			t.Errorf("datagram_size %d: %d per batch, want 4..%d", size, n, batchSize)
		}
		if size <= 1400 && n != batchSize {
			t.Errorf("datagram_size %d: %d per batch, want %d", size, n, batchSize)
		}
		if b := newBatch(size); len(b.pkts) != n || len(b.pkts[0].Buf) != size+1 {
			t.Errorf("datagram_size %d: newBatch holds %d buffers of %d bytes, want %d of %d", size, len(b.pkts), len(b.pkts[0].Buf), n, size+1)
		}
	}
}
