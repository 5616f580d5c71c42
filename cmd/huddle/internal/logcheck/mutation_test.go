package logcheck_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/lab"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/logcheck"
	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/testutil"
)

// The checker is tested by mutation: testdata/runs holds the logs of real
// huddle lab runs on a virtual LAN (steady traffic with a graceful leave,
// a coordinator killed and restarted under loss, a partition and its
// heal, the lock in use, bully elections with the leader killed, causal
// traffic beside FIFO and total under loss), each
// passing every check. TestMutants corrupts them one corruption at a
// time, many times from a seed, and wants every mutant to fail a check
// with a violation that names the node (the mutated log's, or as the
// sender), a line, and the guarantee. A mutant no check catches must
// match a rule that explains why the logs cannot show it (uncatchable);
// any other is a failure of the checker.
//
// The runs were made with, each into testdata/runs/NAME.tgz (the *.json
// of the log directory):
//
//	huddle lab --nodes 4 --duration 8s --args "--send-rate 15 --send-order total" --node '1:--send-order safe' --node '2:--send-order fifo' --node '4:--duration 5s'   # steady
//	huddle lab --nodes 5 --duration 12s --loss 0.02 --args "--send-rate 15 --send-order total" --node '1:--send-order safe' --node '2:--send-order fifo' --fault 4s:kill:coordinator --fault 7s:restart   # chaos
//	huddle lab --nodes 5 --duration 12s --args "--send-rate 15 --send-order total" --node '1:--send-order safe' --node '3:--send-order fifo' --fault 4s:partition:1,2 --fault 8s:heal   # partition
//	huddle lab --nodes 3 --duration 10s --args "--send-rate 5 --send-order total --lock-think 300ms-800ms --lock-hold 150ms"   # lock
//	huddle lab --nodes 5 --duration 12s --args "--send-rate 5 --send-order total --election bully" --elections 3 --pause 2s --fault 6s:kill:5 --fault 9s:restart   # election
//	huddle lab --nodes 4 --duration 8s --loss 0.02 --args "--send-rate 20 --send-order causal" --node '1:--send-order fifo' --node '2:--send-order total'   # causal

// mutantsPerKind is how many mutants of each kind each run gets; with
// -short, shortMutants.
const (
	mutantsPerKind = 25
	shortMutants   = 6
)

// fixture is one run's logs: each file's lines, and the kills of its
// journal.
type fixture struct {
	name   string
	files  map[string][]string // by file name, lab.json left out
	deaths []logcheck.Death
	objs   map[string][]map[string]any // each line of files, parsed
	names  []string                    // the files' names, in order
}

// obj returns line i of file, parsed.
func (fx *fixture) obj(file string, i int) map[string]any { return fx.objs[file][i] }

func loadFixtures(t *testing.T) []*fixture {
	t.Helper()
	paths, _ := filepath.Glob("testdata/runs/*.tgz")
	if len(paths) < 6 {
		t.Fatalf("testdata/runs holds %d runs, want the 6 of mutation_test.go", len(paths))
	}
	var fs []*fixture
	for _, p := range paths {
		fs = append(fs, readFixture(t, p))
	}
	return fs
}

func readFixture(t *testing.T, path string) *fixture {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{name: strings.TrimSuffix(filepath.Base(path), ".tgz"), files: map[string][]string{}}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if name == lab.JournalFile {
			if fx.deaths, err = lab.Deaths(bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		fx.files[name] = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	fx.objs = map[string][]map[string]any{}
	for name, lines := range fx.files {
		fx.names = append(fx.names, name)
		for _, l := range lines {
			fx.objs[name] = append(fx.objs[name], parse(l))
		}
	}
	slices.Sort(fx.names)
	return fx
}

// check runs every check on files, as huddle check does with the run's
// journal.
func (fx *fixture) check(t *testing.T, files map[string][]string) []logcheck.Verdict {
	t.Helper()
	r := &logcheck.Run{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := r.Read(name, strings.NewReader(strings.Join(files[name], "\n")+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	return r.CheckAll(logcheck.AllOptions{Skew: 5 * time.Millisecond, Deaths: fx.deaths})
}

// TestFixturesPass: the real runs pass every check, each having compared
// something, so that a mutant's failure is the mutation's doing.
func TestFixturesPass(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		for _, v := range fx.check(t, fx.files) {
			if !v.OK() {
				t.Errorf("%s: %s fails:\n%s", fx.name, v.Name, v.Text)
			}
			if v.Nothing == "" && !v.Result.ComparedAny() {
				t.Errorf("%s: %s compared nothing: %s", fx.name, v.Name, v.Text)
			}
		}
	}
}

// mutant is one corruption of a run's logs: the file and line it
// changed, the node whose log it is, and what it did.
type mutant struct {
	kind  string
	file  string
	line  int // 1-based, in the original file
	node  uint64
	what  string
	files map[string][]string
}

// mutation makes a mutant of a run, or reports false when the run has
// nothing it could corrupt.
type mutation struct {
	kind string
	make func(fx *fixture, r *rand.Rand) (*mutant, bool)
}

var mutations = []mutation{
	{"delete a delivery", deleteDelivery},
	{"duplicate a delivery", duplicateDelivery},
	{"swap two deliveries", swapDeliveries},
	{"change a CRC", changeCRC},
	{"move a delivery into another view", moveDelivery},
	{"delete a view.installed", deleteView},
	{"truncate a log", truncateLog},
	{"release a lock later", releaseLater},
	{"make a second leader", secondLeader},
	{"deliver a causal message before its cause", causalEarly},
}

// TestMutants applies every mutation to every run, mutantsPerKind times
// from the test's seed, and reports the kill rate of each kind.
func TestMutants(t *testing.T) {
	fixtures := loadFixtures(t)
	testutil.ForSeeds(t, 1, func(t *testing.T, seed int64) {
		r := rand.New(rand.NewPCG(uint64(seed), 0x6d75))
		per := mutantsPerKind
		if testing.Short() {
			per = shortMutants
		}
		var report []string
		for _, m := range mutations {
			made, killed := 0, 0
			var escaped []string
			for _, fx := range fixtures {
				for range per {
					mu, ok := m.make(fx, r)
					if !ok {
						break
					}
					made++
					caught, why := judge(t, fx, mu)
					switch {
					case caught:
						killed++
					case why != "":
						escaped = append(escaped, fmt.Sprintf("%s %s:%d (%s): uncatchable: %s", fx.name, mu.file, mu.line, mu.what, why))
					default:
						t.Errorf("%s: %s: mutant %s:%d (%s) passes every check", fx.name, m.kind, mu.file, mu.line, mu.what)
					}
				}
			}
			if made == 0 {
				t.Errorf("%s: no run had anything to mutate", m.kind)
				continue
			}
			report = append(report, fmt.Sprintf("%-36s %3d of %3d killed (%.0f %%)", m.kind, killed, made, 100*float64(killed)/float64(made)))
			for _, e := range escaped {
				report = append(report, "    "+e)
			}
		}
		t.Logf("kill rates, seed %d:\n%s", seed, strings.Join(report, "\n"))
	})
}

// judge runs the checks on a mutant: caught when a check fails with a
// violation naming the mutant's node (as the node or the sender) and a
// line of a log. When it is not caught, why says why the logs cannot show
// it, if a rule knows, and "" otherwise.
func judge(t *testing.T, fx *fixture, mu *mutant) (caught bool, why string) {
	t.Helper()
	for _, v := range fx.check(t, mu.files) {
		for _, x := range v.Result.Violations {
			if (x.Node == mu.node || x.Sender == mu.node) && x.Line > 0 && x.Kind != "" {
				return true, ""
			}
		}
	}
	return false, uncatchable(fx, mu)
}

// uncatchable explains a mutant no check caught, when it is one the logs
// cannot show: "" for any other.
func uncatchable(fx *fixture, mu *mutant) string {
	if mu.kind == "delete a delivery" && tailDelivery(fx, mu.file, mu.line-1) {
		return "the receiver's last delivery of that sender in its last view, just before it stopped or crashed: nothing after it shows the hole, and no member had to deliver it"
	}
	return ""
}

// tailDelivery reports whether the delivery at line i of file is its
// life's last of that sender in its last view, at the end of the life:
// within seconds of its node.stopped, or at the end of a life that
// crashed (its log goes on with the next life, or ends, without
// node.stopped).
func tailDelivery(fx *fixture, file string, i int) bool {
	ev := fx.obj(file, i)
	for j := i + 1; j < len(fx.objs[file]); j++ {
		o := fx.obj(file, j)
		switch str(o, "event") {
		case logs.NodeStarted:
			return true // the life crashed
		case logs.ViewInstalled:
			return false
		case logs.Deliver:
			if num(o, "from") == num(ev, "from") && str(o, "view") == str(ev, "view") {
				return false
			}
		case logs.NodeStopped:
			return timeOf(o).Sub(timeOf(ev)) < 3*time.Second
		}
	}
	return true // the log ends: the life crashed
}

// The mutations. Each picks its target from r among the lines of fx's
// logs that match, and changes it; a change that finds nothing to do at
// a line returns nil, and pick tries another.

func deleteDelivery(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "delete a delivery", isEvent(logs.Deliver), func(fx *fixture, file string, i int) ([]string, string) {
		return slices.Delete(slices.Clone(fx.files[file]), i, i+1), "deleted"
	})
}

func duplicateDelivery(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "duplicate a delivery", isEvent(logs.Deliver), func(fx *fixture, file string, i int) ([]string, string) {
		lines := fx.files[file]
		return slices.Insert(slices.Clone(lines), i+1, lines[i]), "delivered twice"
	})
}

// swapDeliveries swaps a delivery with a later one of the same life and
// view that comes after it by a guarantee: of the same sender (FIFO), or
// both ordered (total order).
func swapDeliveries(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "swap two deliveries", isEvent(logs.Deliver), func(fx *fixture, file string, i int) ([]string, string) {
		a, objs := fx.obj(file, i), fx.objs[file]
		for j := i + 1; j < len(objs) && j < i+200; j++ {
			b := objs[j]
			if e := str(b, "event"); e == logs.NodeStarted || e == logs.ViewInstalled {
				break
			}
			if str(b, "event") != logs.Deliver || str(b, "view") != str(a, "view") {
				continue
			}
			if num(a, "from") == num(b, "from") || ordered(a) && ordered(b) {
				out := slices.Clone(fx.files[file])
				out[i], out[j] = out[j], out[i]
				return out, fmt.Sprintf("swapped with line %d", j+1)
			}
		}
		return nil, ""
	})
}

// causalEarly moves a causal delivery at a receiver up to just before its
// delivery of a message that the causal message's sender had delivered
// before sending it (the cause), where no message of the causal one's
// sender lies between (that would be a FIFO mutant).
func causalEarly(fx *fixture, r *rand.Rand) (*mutant, bool) {
	causal := func(o map[string]any) bool { return str(o, "event") == logs.Deliver && str(o, "order") == "causal" }
	return pick(fx, r, "deliver a causal message before its cause", causal, func(fx *fixture, file string, i int) ([]string, string) {
		m, objs := fx.obj(file, i), fx.objs[file]
		from, view, self := num(m, "from"), str(m, "view"), num(objs[max(i, 1)], "node")
		if from == self {
			return nil, ""
		}
		cfrom, cseq, ok := causeOf(fx, from, num(m, "seq"), view, self)
		if !ok {
			return nil, ""
		}
		for c := i - 1; c >= 0; c-- {
			o := objs[c]
			switch {
			case str(o, "event") == logs.ViewInstalled || str(o, "event") == logs.NodeStarted:
				return nil, ""
			case str(o, "event") != logs.Deliver:
				continue
			case num(o, "from") == from:
				return nil, "" // the sender's earlier message: FIFO, not causality
			case num(o, "from") == cfrom && num(o, "seq") == cseq && str(o, "view") == view:
				out := slices.Clone(fx.files[file])
				line := out[i]
				out = slices.Delete(out, i, i+1)
				return slices.Insert(out, c, line), fmt.Sprintf("moved before line %d, node %d seq %d, which its sender had delivered before sending it", c+1, int(cfrom), int(cseq))
			}
		}
		return nil, ""
	})
}

// causeOf finds, in node from's log, its send of seq in view and the last
// message of another sender (not node not) it delivered in that view
// before it.
func causeOf(fx *fixture, from, seq float64, view string, not float64) (cfrom, cseq float64, ok bool) {
	objs := fx.objs[fmt.Sprintf("node%d.json", int(from))]
	for s, o := range objs {
		if str(o, "event") != logs.Send || num(o, "seq") != seq || str(o, "view") != view {
			continue
		}
		for c := s - 1; c >= 0; c-- {
			d := objs[c]
			if e := str(d, "event"); e == logs.ViewInstalled || e == logs.NodeStarted {
				return 0, 0, false
			}
			if str(d, "event") == logs.Deliver && str(d, "view") == view && num(d, "from") != from && num(d, "from") != not {
				return num(d, "from"), num(d, "seq"), true
			}
		}
		return 0, 0, false
	}
	return 0, 0, false
}

func changeCRC(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "change a CRC", isEvent(logs.Deliver), func(fx *fixture, file string, i int) ([]string, string) {
		o := clone(fx.obj(file, i))
		o["crc"] = float64(uint32(num(o, "crc")) ^ 0x5a5a)
		return replace(fx.files[file], i, o), "crc changed"
	})
}

// moveDelivery names another view its life installed in a delivery.
func moveDelivery(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "move a delivery into another view", isEvent(logs.Deliver), func(fx *fixture, file string, i int) ([]string, string) {
		o := clone(fx.obj(file, i))
		views := slices.DeleteFunc(lifeViews(fx, file, i), func(v string) bool { return v == str(o, "view") })
		if len(views) == 0 {
			return nil, ""
		}
		v := views[len(views)-1]
		o["view"] = v
		return replace(fx.files[file], i, o), "moved to view " + v
	})
}

func deleteView(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "delete a view.installed", isEvent(logs.ViewInstalled), func(fx *fixture, file string, i int) ([]string, string) {
		return slices.Delete(slices.Clone(fx.files[file]), i, i+1), "deleted view " + str(fx.obj(file, i), "view")
	})
}

// truncateLog cuts a log at a line boundary after its first line.
func truncateLog(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "truncate a log", func(map[string]any) bool { return true }, func(fx *fixture, file string, i int) ([]string, string) {
		lines := fx.files[file]
		if i == 0 {
			return nil, ""
		}
		return slices.Clone(lines[:i]), fmt.Sprintf("cut after line %d of %d", i, len(lines))
	})
}

// releaseLater moves a release past the next grant to another node.
func releaseLater(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "release a lock later", isEvent(logs.MutexReleased), func(fx *fixture, file string, i int) ([]string, string) {
		o := clone(fx.obj(file, i))
		if b, _ := o["lost"].(bool); b {
			return nil, ""
		}
		next, ok := nextGrant(fx, num(o, "node"), timeOf(o))
		if !ok {
			return nil, ""
		}
		at := next.Add(50 * time.Millisecond)
		o["time"] = at.Format("2006-01-02T15:04:05.000000000Z07:00")
		return replace(fx.files[file], i, o), "released at " + at.Format("15:04:05.000")
	})
}

// secondLeader makes a node learn another member of the view as a
// round's leader.
func secondLeader(fx *fixture, r *rand.Rand) (*mutant, bool) {
	return pick(fx, r, "make a second leader", func(o map[string]any) bool {
		e := str(o, "event")
		return e == logs.LeaderChanged || e == logs.ElectionWon
	}, func(fx *fixture, file string, i int) ([]string, string) {
		o := clone(fx.obj(file, i))
		was := num(o, "leader")
		others := slices.DeleteFunc(membersOf(fx, file, i, str(o, "view")), func(id float64) bool { return id == was })
		if len(others) == 0 {
			return nil, ""
		}
		o["leader"] = others[0]
		return replace(fx.files[file], i, o), fmt.Sprintf("leader %v instead of %v", others[0], was)
	})
}

// pick chooses a line of one of fx's logs that matches and applies
// change to it, trying other lines while change finds nothing to do.
func pick(fx *fixture, r *rand.Rand, kind string, match func(map[string]any) bool, change func(*fixture, string, int) ([]string, string)) (*mutant, bool) {
	type place struct {
		file string
		i    int
	}
	var places []place
	for _, name := range fx.names {
		for i, o := range fx.objs[name] {
			if o != nil && match(o) {
				places = append(places, place{name, i})
			}
		}
	}
	r.Shuffle(len(places), func(i, j int) { places[i], places[j] = places[j], places[i] })
	for _, p := range places[:min(len(places), 50)] {
		out, what := change(fx, p.file, p.i)
		if out == nil {
			continue
		}
		files := maps.Clone(fx.files)
		files[p.file] = out
		node := uint64(num(fx.obj(p.file, max(p.i, 1)), "node"))
		return &mutant{kind: kind, file: p.file, line: p.i + 1, node: node, what: what, files: files}, true
	}
	return nil, false
}

func isEvent(name string) func(map[string]any) bool {
	return func(o map[string]any) bool { return str(o, "event") == name }
}

func parse(line string) map[string]any {
	var o map[string]any
	if json.Unmarshal([]byte(line), &o) != nil {
		return nil
	}
	return o
}

func clone(o map[string]any) map[string]any { return maps.Clone(o) }

func replace(lines []string, i int, o map[string]any) []string {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	out := slices.Clone(lines)
	out[i] = string(b)
	return out
}

func str(o map[string]any, k string) string  { s, _ := o[k].(string); return s }
func num(o map[string]any, k string) float64 { f, _ := o[k].(float64); return f }

func ordered(o map[string]any) bool {
	_, final := o["final"]
	return !final && (str(o, "order") == "total" || str(o, "order") == "safe")
}

func timeOf(o map[string]any) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, str(o, "time"))
	return t
}

// lifeViews returns the views installed by the life that line i of file
// belongs to.
func lifeViews(fx *fixture, file string, i int) []string {
	objs, start := fx.objs[file], 0
	for j := i; j >= 0; j-- {
		if str(objs[j], "event") == logs.NodeStarted {
			start = j
			break
		}
	}
	var views []string
	for j, o := range objs[start:] {
		if str(o, "event") == logs.NodeStarted && j > 0 {
			break
		}
		if str(o, "event") == logs.ViewInstalled {
			views = append(views, str(o, "view"))
		}
	}
	return views
}

// membersOf returns the members of view as file logged its install
// before line i.
func membersOf(fx *fixture, file string, i int, view string) []float64 {
	for j := i; j >= 0; j-- {
		o := fx.obj(file, j)
		if str(o, "event") == logs.ViewInstalled && str(o, "view") == view {
			var ids []float64
			for _, m := range o["members"].([]any) {
				ids = append(ids, m.(float64))
			}
			return ids
		}
	}
	return nil
}

// nextGrant returns the first mutex.acquired of a node other than node
// after t, in any log of fx.
func nextGrant(fx *fixture, node float64, t time.Time) (time.Time, bool) {
	var first time.Time
	for _, objs := range fx.objs {
		for _, o := range objs {
			if str(o, "event") == logs.MutexAcquired && num(o, "node") != node && timeOf(o).After(t) && (first.IsZero() || timeOf(o).Before(first)) {
				first = timeOf(o)
			}
		}
	}
	return first, !first.IsZero()
}
