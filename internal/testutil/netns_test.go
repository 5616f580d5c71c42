package testutil

import (
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestPrivateNetwork(t *testing.T) {
	if !PrivateNetwork(t) {
		return
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifs) != 1 || ifs[0].Name != "lo" {
		t.Fatalf("interfaces = %v, want only lo", ifs)
	}
	if want := net.FlagUp | net.FlagLoopback | net.FlagMulticast; ifs[0].Flags&want != want {
		t.Fatalf("lo flags = %v, want %v", ifs[0].Flags, want)
	}
	out, err := exec.Command("ip", "route", "show", "224.0.0.0/4").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dev lo") {
		t.Fatalf("ip route show 224.0.0.0/4 = %q, %v; want a route via lo", out, err)
	}
	if err := setupLoopback(); err != nil { // once per process: no error on a second call
		t.Fatal(err)
	}
}

// TestPrivateNetworkSkip checks that a skip inside the namespace skips the
// parent too.
func TestPrivateNetworkSkip(t *testing.T) {
	if !PrivateNetwork(t) {
		t.Error("PrivateNetwork returned false without skipping t")
		return
	}
	t.Skip("skipped inside")
}

func TestRunPattern(t *testing.T) {
	if got, want := runPattern("TestA.b+c"), `^TestA\.b\+c$`; got != want {
		t.Fatalf("runPattern = %q, want %q", got, want)
	}
}

func TestChildVerdictLines(t *testing.T) {
	lines := []string{"=== RUN   TestX", "    x_test.go:9: --- PASS: TestX (0.00s)", "    --- FAIL: TestX/sub (0.00s)", "--- PASS: TestX (0.01s)"}
	if !hasLine(lines, "--- PASS: TestX ") {
		t.Error("PASS line not found")
	}
	if hasLine(lines, "--- FAIL: TestX ") {
		t.Error("a subtest's FAIL counted as the test's")
	}
	if hasLine(lines, "--- PASS: TestXY ") || hasLine(lines, "--- PASS: Test ") {
		t.Error("a different name matched")
	}
}

func TestBenchMetrics(t *testing.T) {
	lines := []string{
		"BenchmarkLoop",
		"BenchmarkLoopX-8   \t  10\t 5 ns/op",
		"BenchmarkLoop-8   \t    2048\t    512345 ns/op\t    1.25e+06 dgram/s\t  0 B/op",
		"PASS",
	}
	got := benchMetrics(lines, "BenchmarkLoop")
	want := []metric{{512345, "ns/op"}, {1.25e6, "dgram/s"}, {0, "B/op"}}
	if !slices.Equal(got, want) {
		t.Fatalf("benchMetrics = %v, want %v", got, want)
	}
	if got := benchMetrics(lines[:2], "BenchmarkLoop"); got != nil {
		t.Fatalf("no result line: benchMetrics = %v, want nil", got)
	}
}
