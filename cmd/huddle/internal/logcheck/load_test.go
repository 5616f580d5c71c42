package logcheck

import (
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

// BenchmarkRead reads a log of 100 000 deliver events.
func BenchmarkRead(b *testing.B) {
	var sb strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&sb, `{"level":"info","node":2,"event":"deliver","from":1,"seq":%d,"len":1000,"crc":%d,"time":"2025-01-02T03:04:05.%09dZ","message":"delivered"}`+"\n",
			i+1, crc32.ChecksumIEEE([]byte{byte(i)}), i)
	}
	log := sb.String()
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		r := &Run{}
		if err := r.Read("node2.json", strings.NewReader(log)); err != nil || len(r.Lives[0].Delivers) != 100000 {
			b.Fatal(err)
		}
	}
}
