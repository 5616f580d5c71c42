package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/internal/lab"
)

// rawRun is one run of the raw blaster and its sinks.
type rawRun struct {
	size  int
	blast blastResult
	sinks []sinkResult
	hosts []int
	load  string // the machine's CPU use during the blast
}

// rate is the delivered datagrams per second at receiver i, from its first
// to its last datagram.
func (r *rawRun) rate(i int) float64 {
	s := r.sinks[i]
	if s.Got < 2 || s.LastNs <= s.FirstNs {
		return 0
	}
	return float64(s.Got-1) / (float64(s.LastNs-s.FirstNs) / 1e9)
}

// slowest returns the index of the receiver with the lowest rate.
func (r *rawRun) slowest() int {
	k := 0
	for i := range r.sinks {
		if r.rate(i) < r.rate(k) {
			k = i
		}
	}
	return k
}

// runRaw blasts size-byte datagrams from sender to receivers for d.
func runRaw(sc *scenario, l *lab.LAN, sender int, receivers []int, size int, d time.Duration) *rawRun {
	sc.Helper()
	group := groupAddr + ":" + strconv.Itoa(nextPort())
	runSeq++
	var procs []*lab.Proc
	for _, h := range receivers {
		name := fmt.Sprintf("raw%d-sink%d", runSeq, h)
		p, err := l.Start(h, name, helperArgv(sc, "sink", group, lab.Iface, strconv.Itoa(8<<20), "500ms", (d+10*time.Second).String()))
		if err != nil {
			sc.Fatal(err)
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if err := waitLine(p, "ready", 5*time.Second); err != nil {
			sc.Fatal(err)
		}
	}
	r := &rawRun{size: size, hosts: receivers}
	c0 := readCPU()
	out, err := l.Exec(sender, helperArgv(sc, "blast", group, lab.Iface, strconv.Itoa(size), d.String(), "64")...)
	if err != nil {
		sc.Fatalf("blaster: %v", err)
	}
	r.load = machineLoad(c0, readCPU())
	if err := lastJSON(out, &r.blast); err != nil {
		sc.Fatalf("blaster: %v:\n%s", err, out)
	}
	for _, p := range procs {
		if err := p.WaitTimeout(15 * time.Second); err != nil {
			sc.Fatalf("%s: %v", p.Name, err)
		}
		data, _ := os.ReadFile(p.LogPath())
		var s sinkResult
		if err := lastJSON(data, &s); err != nil {
			sc.Fatalf("%s: %v:\n%s", p.Name, err, data)
		}
		r.sinks = append(r.sinks, s)
	}
	return r
}

// helperArgv is the command that runs this test binary as a helper.
func helperArgv(b testing.TB, args ...string) []string {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	// GORACE: a race-enabled binary otherwise sleeps 1s at exit.
	return append([]string{"env", helperEnv + "=1", "GORACE=atexit_sleep_ms=0", self}, args...)
}

func waitLine(p *lab.Proc, s string, timeout time.Duration) error {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		exited := p.Exited()
		if data, _ := os.ReadFile(p.LogPath()); strings.Contains(string(data), s) {
			return nil
		}
		if exited {
			break
		}
	}
	data, _ := os.ReadFile(p.LogPath())
	return fmt.Errorf("%s: no %q within %v:\n%s", p.Name, s, timeout, data)
}

// lastJSON decodes the last line of out that is a JSON object.
func lastJSON(out []byte, v any) error {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); len(l) > 0 && l[0] == '{' {
			return json.Unmarshal(l, v)
		}
	}
	return fmt.Errorf("no JSON result")
}
func rawDetail(r *rawRun, runs int) string {
	var per, drops, cpu []string
	for i, s := range r.sinks {
		per = append(per, fmt.Sprintf("h%d %s (%d)", r.hosts[i], rate(r.rate(i), "/s"), s.Got))
		drops = append(drops, fmt.Sprint(s.Drops))
		cpu = append(cpu, fmt.Sprintf("%.1f (%.2f ctxsw/dgram)", usPer(s.CPU, s.Got), float64(s.CtxSw)/float64(max(s.Got, 1))))
	}
	sent := float64(r.blast.Sent) / r.blast.Seconds
	return fmt.Sprintf("median of %d; blaster sent %d in %.2fs (%s, %d errors, sendmmsg of 64); received %s; "+
		"socket drops %s; rcvbuf %d B; lost at slowest %.1f %%; CPU µs/datagram: blaster %.1f (%.0f %% of a CPU), sinks %s; %s",
		runs, r.blast.Sent, r.blast.Seconds, rate(sent, "dgram/s"), r.blast.Errors, strings.Join(per, ", "),
		strings.Join(drops, "/"), r.sinks[0].RcvBuf, 100*(1-float64(r.sinks[r.slowest()].Got)/float64(max(r.blast.Sent, 1))),
		usPer(r.blast.CPU, r.blast.Sent), 100*r.blast.CPU/r.blast.Seconds, strings.Join(cpu, "/"), r.load)
}
