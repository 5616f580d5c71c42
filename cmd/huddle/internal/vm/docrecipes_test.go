package vm_test

// The docs' netem and ifb recipes, run as written in the VM (issue 29:
// "the docs cannot drift"). TestDocRecipesInVM extracts every fenced sh
// block of README.md and docs/experiments.md that holds a tc command or
// an `ip link add … ifb`, claims each one for a recipe below, runs its
// lines unchanged with busybox sh in a guest namespace whose interface is
// eth0 (the docs' name), and checks the effect: loss that ping sees and
// tc -s counts, then the undo and nothing left behind.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/huddle-lan/huddle/cmd/huddle/internal/vm"
)

// docsRoot is the repository, from this package's directory.
const docsRoot = "../../../.."

// recipePages are the pages whose netem and ifb recipes must run.
var recipePages = []string{"README.md", "docs/experiments.md"}

// docBlock is a fenced code block of a page.
type docBlock struct {
	file  string
	line  int    // the opening fence's line
	lang  string // the fence's info string
	lines []string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var (
	fenceRE = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*(\\S*)")
	// tcRE and ifbRE find the commands that make a block a recipe: tc
	// anywhere a command can start, and ip link add of an ifb device.
	tcRE  = regexp.MustCompile(`(^|[\s;&|(])tc\s`)
	ifbRE = regexp.MustCompile(`(^|[\s;&|(])ip\s+(\S+\s+)*link\s+add\s.*\bifb\b`)
	// heredocRE is the first line of a block that writes a script file.
	heredocRE = regexp.MustCompile(`^cat > (\S+) <<'(\w+)'$`)
	// scriptTestRE is the line after the heredoc: TestScriptInVM runs
	// the script in the VM, from the host.
	scriptTestRE = regexp.MustCompile(`^HUDDLE_VM_SCRIPT=(\S+) HUDDLE_VM_OUT=\S+ go test -run '\^TestScriptInVM\$' -v \./cmd/huddle/internal/vm$`)
	undoRE       = regexp.MustCompile(`#\s*undo:\s*(.+?)\s*$`)
	spanRE       = regexp.MustCompile("`([^`]+)`")
	tcFilterRE   = regexp.MustCompile(`^tc\s+filter\s+add\s`)
)

// codeBlocks returns the fenced code blocks of a page, their lines
// without the fence's indentation.
func codeBlocks(file, text string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	var indent, fence string
	for i, l := range strings.Split(text, "\n") {
		m := fenceRE.FindStringSubmatch(l)
		switch {
		case cur == nil && m != nil:
			cur = &docBlock{file: file, line: i + 1, lang: m[3]}
			indent, fence = m[1], m[2]
		case cur != nil && m != nil && strings.HasPrefix(m[2], fence) && m[3] == "":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, strings.TrimPrefix(l, indent))
		}
	}
	return blocks
}

// filterSpans returns the inline code spans of a page's prose that are
// tc filter commands, with their lines (a span may run over lines: its
// spaces and line breaks become one space).
func filterSpans(text string) (spans []string, lines []int) {
	var prose []string
	var numbers []int
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fenceRE.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			prose, numbers = append(prose, l), append(numbers, i+1)
		}
	}
	joined := strings.Join(prose, "\n")
	for _, m := range spanRE.FindAllStringSubmatchIndex(joined, -1) {
		if span := strings.Join(strings.Fields(joined[m[2]:m[3]]), " "); tcFilterRE.MatchString(span) {
			spans = append(spans, span)
			lines = append(lines, numbers[strings.Count(joined[:m[0]], "\n")])
		}
	}
	return spans, lines
}

// isRecipe reports whether a block holds a tc command or adds an ifb.
func isRecipe(b docBlock) bool {
	for _, l := range b.lines {
		if tcRE.MatchString(l) || ifbRE.MatchString(l) {
			return true
		}
	}
	return false
}

// docRecipe is a block claimed for a run: its name, and the files the
// guest runs for it (name → text, in /recipes).
type docRecipe struct {
	name  string
	block docBlock
	files map[string]string
}

// claimRecipes extracts the recipes of the pages and claims each for one
// of the runs below; anything it cannot claim is an error naming the
// block, so that no recipe goes untested. The runs:
//
//   - ingress: the block that adds ifb0 (netem on the receive side), and
//     ingress-undo, the block right after it that deletes ifb0;
//   - ingress-u32: the same block with its tc filter line replaced by
//     the u32 filter that the prose gives as the alternative to matchall
//     (an inline code span), undone by ingress-undo; any other tc filter
//     span is an error;
//   - egress: a one-line `tc qdisc add dev eth0 root netem …` with its
//     undo in a `# undo:` comment, which is run too;
//   - script: the block of "netem in a VM" that writes a script with a
//     heredoc and runs it with TestScriptInVM. The guest runs the
//     heredoc as written, then the script as TestScriptInVM's guest does
//     (the harness's prelude, then the script, under sh); the go test
//     line, which runs this harness from the host, is not run but must
//     read exactly as scriptTestRE says, naming the heredoc's file.
func claimRecipes(t *testing.T, root string) ([]docRecipe, []string) {
	t.Helper()
	var recipes []docRecipe
	var errs []string
	claimed := map[string]docBlock{}
	claim := func(name string, b docBlock, files map[string]string) {
		if prev, ok := claimed[name]; ok {
			errs = append(errs, fmt.Sprintf("%s: a second %s recipe (the first at %s): TestDocRecipesInVM runs one of each; teach it the other (docrecipes_test.go)", b, name, prev))
			return
		}
		claimed[name] = b
		recipes = append(recipes, docRecipe{name: name, block: b, files: files})
	}
	for _, page := range recipePages {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		prev := "" // the recipe the previous recipe block was claimed for
		for _, b := range codeBlocks(page, string(text)) {
			if !isRecipe(b) {
				continue
			}
			last, claimedBefore := prev, len(recipes)
			prev = ""
			if b.lang != "sh" {
				errs = append(errs, fmt.Sprintf("%s: a netem/ifb recipe in a ```%s block: write it as ```sh, which TestDocRecipesInVM runs", b, b.lang))
				continue
			}
			body := strings.Join(b.lines, "\n") + "\n"
			has := func(line string) bool {
				for _, l := range b.lines {
					if strings.TrimSpace(l) == line {
						return true
					}
				}
				return false
			}
			switch {
			case has("ip link add ifb0 type ifb"):
				claim("ingress", b, map[string]string{"ingress.sh": vm.ScriptPrelude + body})
			case has("ip link del ifb0"):
				if last != "ingress" {
					errs = append(errs, fmt.Sprintf("%s: the undo of the ifb recipe must be the recipe block right after it, which TestDocRecipesInVM runs before it", b))
					continue
				}
				claim("ingress-undo", b, map[string]string{"ingress-undo.sh": vm.ScriptPrelude + body})
			case len(b.lines) == 1 && strings.HasPrefix(b.lines[0], "tc qdisc add dev eth0 root netem ") && undoRE.MatchString(b.lines[0]):
				undo := undoRE.FindStringSubmatch(b.lines[0])[1]
				claim("egress", b, map[string]string{
					"egress.sh":      vm.ScriptPrelude + body,
					"egress-undo.sh": vm.ScriptPrelude + undo + "\n",
				})
			case heredocRE.MatchString(b.lines[0]):
				m := heredocRE.FindStringSubmatch(b.lines[0])
				end := -1
				for i, l := range b.lines {
					if i > 0 && l == m[2] {
						end = i
						break
					}
				}
				rest := b.lines[end+1:]
				if end < 0 || len(rest) != 1 || !scriptTestRE.MatchString(rest[0]) || scriptTestRE.FindStringSubmatch(rest[0])[1] != m[1] {
					errs = append(errs, fmt.Sprintf("%s: a script written by a heredoc must be followed by one line, HUDDLE_VM_SCRIPT=%s HUDDLE_VM_OUT=DIR go test -run '^TestScriptInVM$' -v ./cmd/huddle/internal/vm, for TestDocRecipesInVM to run it", b, m[1]))
					continue
				}
				if m[1] != "exp.sh" {
					errs = append(errs, fmt.Sprintf("%s: the script is %s; TestDocRecipesInVM runs exp.sh: teach it the new name", b, m[1]))
					continue
				}
				claim("script", b, map[string]string{"script.sh": vm.ScriptPrelude + strings.Join(b.lines[:end+1], "\n") + "\n"})
			default:
				errs = append(errs, fmt.Sprintf("%s: a netem/ifb recipe that TestDocRecipesInVM does not run: teach it this one (docrecipes_test.go):\n%s", b, body))
				continue
			}
			if len(recipes) > claimedBefore {
				prev = recipes[len(recipes)-1].name
			}
		}
	}
	// The u32 alternative, in the prose of the ifb recipe: the ifb block
	// with its filter line replaced by it, undone by the same undo block.
	for _, page := range recipePages {
		spans, lines := filterSpans(readFile(t, filepath.Join(root, page)))
		for k, span := range spans {
			ingress, ok1 := claimed["ingress"]
			undo, ok2 := claimed["ingress-undo"]
			if !strings.Contains(span, " u32 ") || !ok1 || !ok2 || ingress.file != page {
				errs = append(errs, fmt.Sprintf("%s:%d: a tc filter recipe in the prose that TestDocRecipesInVM does not run: `%s`: teach it this one (docrecipes_test.go)", page, lines[k], span))
				continue
			}
			var setup []string
			replaced := 0
			for _, l := range ingress.lines {
				if strings.HasPrefix(l, "tc filter add ") {
					l = span
					replaced++
				}
				setup = append(setup, l)
			}
			if replaced != 1 {
				errs = append(errs, fmt.Sprintf("%s: %d tc filter lines in the ifb recipe, for `%s` to replace: want 1", ingress, replaced, span))
				continue
			}
			claim("ingress-u32", docBlock{file: page, line: lines[k], lang: "sh", lines: setup}, map[string]string{
				"ingress-u32.sh":      vm.ScriptPrelude + strings.Join(setup, "\n") + "\n",
				"ingress-u32-undo.sh": vm.ScriptPrelude + strings.Join(undo.lines, "\n") + "\n",
			})
		}
	}
	for _, name := range []string{"ingress", "ingress-undo", "ingress-u32", "egress", "script"} {
		if _, ok := claimed[name]; !ok {
			errs = append(errs, fmt.Sprintf("no %s recipe in %s: was it removed or rewritten? TestDocRecipesInVM expects one (docrecipes_test.go)", name, strings.Join(recipePages, ", ")))
		}
	}
	// TestScriptInVM, which the script recipe's last line runs, reads the
	// variables that line sets.
	src := readFile(t, "script_test.go")
	for _, s := range []string{"func TestScriptInVM(", `os.Getenv("HUDDLE_VM_SCRIPT")`, `os.Getenv("HUDDLE_VM_OUT")`} {
		if !strings.Contains(src, s) {
			errs = append(errs, fmt.Sprintf("script_test.go has no %s, which docs/experiments.md's script recipe uses", s))
		}
	}
	return recipes, errs
}

// docRecipesScript is the guest's script: for ingress and egress, a LAN
// of two hosts on a bridge (h1 and h2, eth0 in each, 10.77.0.1 and .2),
// the recipe run as written by busybox sh -e in h1, 300 pings from h1 to
// h2 through it, tc -s's counters, the undo as written, what is left, and
// 50 pings more; for the script, its heredoc run as written in a fresh
// namespace hs with lo up, then exp.sh as TestScriptInVM's guest runs it.
// Each leaves its files in /out/NAME.
const docRecipesScript = `must() { "$@" || echo "failed: $*" >> errors.txt; }
lan() {
	must ip link add br0 type bridge stp_state 0 mcast_snooping 0
	must ip link set br0 up
	for i in 1 2; do
		must ip netns add h$i
		must ip link add port$i type veth peer name eth0 netns h$i
		must ip link set port$i master br0 up
		must ip -n h$i link set lo up
		must ip -n h$i addr add 10.77.0.$i/24 dev eth0
		must ip -n h$i link set eth0 up
	done
}
unlan() { ip netns del h1; ip netns del h2; ip link del br0; }
# run STEP FILE: /recipes/FILE as written, by busybox sh -e, in h1.
run() { /usr/sbin/ip netns exec h1 sh -ex /recipes/$2 > $1.out 2>&1; echo $? > $1.status; }
# pings FILE N: N pings from h1 to h2, 5 ms apart.
pings() { /usr/sbin/ip netns exec h1 ping -c $2 -i 0.005 -W 2 -w 30 10.77.0.2 > $1 2>&1; }
for r in ingress ingress-u32 egress; do
	mkdir /out/$r && cd /out/$r
	lan
	pings before.txt 3
	run setup $r.sh
	pings ping.txt 300
	tc -n h1 -s qdisc show > tc.txt
	run undo $r-undo.sh
	tc -n h1 qdisc show > tc-after.txt
	ip -n h1 link show > link-after.txt
	pings ping-after.txt 50
	cd /out
	unlan
done
mkdir /out/script && cd /out/script
ip netns add hs
ip -n hs link set lo up
/usr/sbin/ip netns exec hs sh -ex /recipes/script.sh > write.out 2>&1
echo $? > write.status
cat /recipes/prelude.sh exp.sh > run.sh
/usr/sbin/ip netns exec hs sh run.sh > run.out 2>&1
echo $? > run.status
ip netns del hs
`

// TestDocRecipesInVM runs the netem and ifb recipes of README.md and
// docs/experiments.md as written, in one VM boot, and checks what each
// does. The extraction and the claims run first, also under -short and
// without qemu: a new recipe, or one changed past recognition, fails here
// with its file and line.
func TestDocRecipesInVM(t *testing.T) {
	recipes, errs := claimRecipes(t, docsRoot)
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	for _, r := range recipes {
		t.Logf("%s: recipe %s", r.block, r.name)
	}
	needVM(t)
	files := map[string]string{}
	dir := t.TempDir()
	put := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		files["/recipes/"+name] = p
	}
	put("prelude.sh", vm.ScriptPrelude)
	for _, r := range recipes {
		for name, text := range r.files {
			put(name, text)
		}
	}
	out := os.Getenv("HUDDLE_VM_OUT")
	if out == "" {
		out = t.TempDir()
	}
	start := time.Now()
	res, err := vm.Run(context.Background(), vm.Options{
		Script: docRecipesScript, Files: files, OutDir: out,
		Timeout: 3 * time.Minute, Logf: t.Logf,
		// cls_u32 for the u32 alternative to matchall.
		Modules: append(slices.Clone(vm.DefaultModules), "cls_u32"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM: booted in %v, ran %v in all (%v with the initramfs); files in %s", res.Boot.Round(time.Millisecond),
		res.Elapsed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), out)
	if res.Status != 0 {
		t.Fatalf("the guest's script exited %d:\n%s", res.Status, res.Output)
	}
	by := map[string]docRecipe{}
	for _, r := range recipes {
		by[r.name] = r
	}
	t.Run("ingress", func(t *testing.T) {
		checkLossRecipe(t, filepath.Join(out, "ingress"), by["ingress"], by["ingress-undo"], "ifb0")
	})
	t.Run("ingress-u32", func(t *testing.T) {
		checkLossRecipe(t, filepath.Join(out, "ingress-u32"), by["ingress-u32"], by["ingress-undo"], "ifb0")
	})
	t.Run("egress", func(t *testing.T) {
		checkLossRecipe(t, filepath.Join(out, "egress"), by["egress"], by["egress"], "eth0")
	})
	t.Run("script", func(t *testing.T) { checkScriptRecipe(t, filepath.Join(out, "script"), by["script"]) })
}

// checkLossRecipe checks a loss recipe's run in dir: the LAN worked, the
// recipe and its undo ran without an error, ping lost replies and the
// netem qdisc on dev counted drops; after the undo, no netem, no ingress
// qdisc, no ifb0, and no loss.
func checkLossRecipe(t *testing.T, dir string, setup, undo docRecipe, dev string) {
	if b, err := os.ReadFile(filepath.Join(dir, "errors.txt")); err == nil {
		t.Fatalf("the LAN's setup failed:\n%s", b)
	}
	if tx, rx := pingCounts(t, filepath.Join(dir, "before.txt")); rx != tx {
		t.Fatalf("before the recipe, %d of %d pings answered: the LAN does not work", rx, tx)
	}
	step := func(name string, r docRecipe) {
		if s := strings.TrimSpace(readFile(t, filepath.Join(dir, name+".status"))); s != "0" {
			t.Fatalf("%s: the recipe (%s) exited %s run as written:\n%s", r.block, name, s, readFile(t, filepath.Join(dir, name+".out")))
		}
	}
	step("setup", setup)
	tx, rx := pingCounts(t, filepath.Join(dir, "ping.txt"))
	sent, dropped := qdiscCounts(t, filepath.Join(dir, "tc.txt"), "netem", dev)
	t.Logf("%s: %d of %d pings answered; netem on %s sent %d, dropped %d", setup.block, rx, tx, dev, sent, dropped)
	if tx < 300 || rx >= tx {
		t.Errorf("%s: %d of %d pings answered: want 300 sent and some lost", setup.block, rx, tx)
	}
	if dropped == 0 {
		t.Errorf("%s: netem on %s dropped nothing:\n%s", setup.block, dev, readFile(t, filepath.Join(dir, "tc.txt")))
	}
	step("undo", undo)
	after := readFile(t, filepath.Join(dir, "tc-after.txt"))
	if strings.Contains(after, "netem") || strings.Contains(after, "qdisc ingress") {
		t.Errorf("%s: after the undo, qdiscs are left:\n%s", undo.block, after)
	}
	if links := readFile(t, filepath.Join(dir, "link-after.txt")); strings.Contains(links, "ifb") {
		t.Errorf("%s: after the undo, an ifb is left:\n%s", undo.block, links)
	}
	if tx, rx := pingCounts(t, filepath.Join(dir, "ping-after.txt")); tx < 50 || rx != tx {
		t.Errorf("%s: after the undo, %d of %d pings answered: want all of 50", undo.block, rx, tx)
	}
}

// checkScriptRecipe checks the script recipe's run: the heredoc wrote
// exp.sh as the block has it, and exp.sh ran: 20 pings over lo with
// netem's 5 ms each way (round trips of 10 ms at least), tc -s showing
// the netem qdisc. Its 10 % loss is logged, not required: 20 pings lose
// none about once in 70 runs.
func checkScriptRecipe(t *testing.T, dir string, r docRecipe) {
	if s := strings.TrimSpace(readFile(t, filepath.Join(dir, "write.status"))); s != "0" {
		t.Fatalf("%s: the heredoc exited %s run as written:\n%s", r.block, s, readFile(t, filepath.Join(dir, "write.out")))
	}
	m := heredocRE.FindStringSubmatch(r.block.lines[0])
	var want []string
	for _, l := range r.block.lines[1:] {
		if l == m[2] {
			break
		}
		want = append(want, l)
	}
	if got := readFile(t, filepath.Join(dir, "exp.sh")); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("%s: the heredoc wrote\n%s\nwant\n%s", r.block, got, strings.Join(want, "\n"))
	}
	runOut := readFile(t, filepath.Join(dir, "run.out"))
	if s := strings.TrimSpace(readFile(t, filepath.Join(dir, "run.status"))); s != "0" {
		t.Fatalf("%s: exp.sh exited %s:\n%s", r.block, s, runOut)
	}
	tx, rx := pingCounts(t, filepath.Join(dir, "ping.txt"))
	// tc -s qdisc show dev lo names no device: "qdisc netem 8003: root ...".
	var sent, dropped int64
	if m := regexp.MustCompile(`(?s)qdisc netem [0-9a-f]+: .*?Sent \d+ bytes (\d+) pkt \(dropped (\d+)`).FindStringSubmatch(runOut); m != nil {
		sent, _ = strconv.ParseInt(m[1], 10, 64)
		dropped, _ = strconv.ParseInt(m[2], 10, 64)
	} else {
		t.Errorf("%s: exp.sh's tc -s qdisc show dev lo shows no netem:\n%s", r.block, runOut)
	}
	rtt := regexp.MustCompile(`min/avg/max = ([0-9.]+)/`).FindStringSubmatch(readFile(t, filepath.Join(dir, "ping.txt")))
	min := 0.0
	if rtt != nil {
		min, _ = strconv.ParseFloat(rtt[1], 64)
	}
	t.Logf("%s: %d of %d pings answered, round trips from %g ms; netem on lo sent %d, dropped %d", r.block, rx, tx, min, sent, dropped)
	if tx != 20 || rx == 0 {
		t.Errorf("%s: %d of %d pings answered: want 20 sent, most answered", r.block, rx, tx)
	}
	if min < 10 {
		t.Errorf("%s: the round trips' minimum is %g ms: netem's 5 ms each way want 10 at least", r.block, min)
	}
	if sent+dropped < 20 {
		t.Errorf("%s: netem on lo saw %d packets, fewer than the 20 requests", r.block, sent+dropped)
	}
	if !strings.Contains(runOut, "delay 5ms") || !strings.Contains(runOut, "loss 10%") {
		t.Errorf("%s: tc -s qdisc show dev lo shows no delay 5ms loss 10%%:\n%s", r.block, runOut)
	}
}

// pingCounts reads busybox ping's summary: "300 packets transmitted, 285
// packets received, 5% packet loss".
func pingCounts(t *testing.T, path string) (tx, rx int) {
	t.Helper()
	text := readFile(t, path)
	m := regexp.MustCompile(`(\d+) packets transmitted, (\d+) packets received`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no ping summary:\n%s", path, text)
	}
	tx, _ = strconv.Atoi(m[1])
	rx, _ = strconv.Atoi(m[2])
	return tx, rx
}

// TestDocRecipesClaims: the claims fail, naming the file and line, on a
// new recipe, a recipe rewritten past recognition, and a missing one.
func TestDocRecipesClaims(t *testing.T) {
	page := readFile(t, filepath.Join(docsRoot, "docs/experiments.md"))
	// Each case replaces old by new; want's %d is the line of old plus
	// off (the block's fence, or the new line).
	for _, c := range []struct {
		name, old, new string
		off            int
		want           []string
	}{
		{"new block", "## Partitions\n", "```sh\ntc qdisc add dev eth0 root tbf rate 1mbit burst 32kbit latency 400ms\n```\n\n## Partitions\n", 0,
			[]string{"docs/experiments.md:%d: a netem/ifb recipe that TestDocRecipesInVM does not run"}},
		{"not sh", "## Partitions\n", "```bash\ntc qdisc del dev eth0 root\n```\n\n## Partitions\n", 0,
			[]string{"docs/experiments.md:%d: a netem/ifb recipe in a ```bash block"}},
		{"ifb renamed", "ip link add ifb0 type ifb\n", "ip link add ifb1 type ifb\n", -1,
			[]string{"docs/experiments.md:%d: a netem/ifb recipe that TestDocRecipesInVM does not run", "no ingress recipe"}},
		{"undo comment dropped", "loss 5%      # undo: tc qdisc del dev eth0 root\n", "loss 5%\n", -1,
			[]string{"docs/experiments.md:%d: a netem/ifb recipe that TestDocRecipesInVM does not run", "no egress recipe"}},
		{"go test line changed", "-run '^TestScriptInVM$' -v", "-run TestScriptInVM -v", -6,
			[]string{"docs/experiments.md:%d: a script written by a heredoc must be followed by one line"}},
		{"new filter span", "* This drops 5 %", "* Or `tc filter add dev eth0 parent ffff: bpf obj x.o action mirred egress redirect dev ifb0`.\n* This drops 5 %", 0,
			[]string{"docs/experiments.md:%d: a tc filter recipe in the prose"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(page, c.old) {
				t.Fatalf("docs/experiments.md has no %q", c.old)
			}
			root := t.TempDir()
			for name, text := range map[string]string{
				"README.md":           readFile(t, filepath.Join(docsRoot, "README.md")),
				"docs/experiments.md": strings.Replace(page, c.old, c.new, 1),
			} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, errs := claimRecipes(t, root)
			all := strings.Join(errs, "\n")
			line := strings.Count(page[:strings.Index(page, c.old)], "\n") + 1 + c.off
			for _, w := range c.want {
				if strings.Contains(w, "%d") {
					w = fmt.Sprintf(w, line)
				}
				if !strings.Contains(all, w) {
					t.Errorf("the errors do not say %q:\n%s", w, all)
				}
			}
		})
	}
}
