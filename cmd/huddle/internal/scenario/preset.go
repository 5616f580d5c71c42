package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/huddle-lan/huddle/config"
)

// A preset reproduces one of the programs this project grew from, with
// their parameters as fields of the Scenario (and flags of huddle lab).
type preset struct {
	name, what string
	make       func() *Scenario
}

var presets = []preset{
	{"ring-voting", "Chang–Roberts ring election on a ring in join order, as ring_voting places its workers: a series of elections (--elections) with a pause between (--pause), as ring_voting -n 3 --sleep 5000",
		func() *Scenario {
			return &Scenario{Name: "ring-voting", Nodes: 5, Elections: 3, Pause: config.Duration(5 * time.Second),
				Args: []string{"--election", "ring", "--election-ring-order", "join", "--send-rate", "0"}}
		}},
	{"dist-sync", "Ricart–Agrawala mutual exclusion: every node thinks 3-5 s (--think), takes the group's lock, holds it 4 s (--hold), as dist_sync 3",
		func() *Scenario { return distSync("dist-sync", "ra") }},
	{"dist-sync-central", "dist-sync with the central server lock: the view's coordinator grants (REQUEST, GRANT, RELEASE: 3 messages an entry)",
		func() *Scenario { return distSync("dist-sync-central", "central") }},
	{"dist-sync-token", "dist-sync with the token ring lock: the token goes round the members by ID (0 to n-1 passes an entry)",
		func() *Scenario { return distSync("dist-sync-token", "token") }},
	{"bully-crash-restart", "Garcia-Molina Bully election while nodes crash at random (--crash-rate a node a minute) and come back with the same ID after --down",
		func() *Scenario {
			return &Scenario{Name: "bully-crash-restart", Nodes: 5, Duration: config.Duration(60 * time.Second),
				Args:   []string{"--election", "bully", "--send-rate", "20", "--send-order", "total"},
				Random: &Random{CrashRate: 1, Down: config.Duration(4 * time.Second)}}
		}},
}

// distSync is the dist-sync preset with the lock algorithm alg.
func distSync(name, alg string) *Scenario {
	return &Scenario{Name: name, Nodes: 3, Duration: config.Duration(40 * time.Second),
		Args: []string{"--send-rate", "0", "--lock-think", "3s-5s", "--lock-hold", "4s", "--mutex-algorithm", alg}}
}

// Presets lists the presets' names.
func Presets() []string {
	var out []string
	for _, p := range presets {
		out = append(out, p.name)
	}
	return out
}

// PresetHelp describes every preset, one per line.
func PresetHelp() string {
	var b strings.Builder
	for _, p := range presets {
		fmt.Fprintf(&b, "  %-20s %s\n", p.name, p.what)
	}
	return b.String()
}

// Preset returns a new scenario of the named preset.
func Preset(name string) (*Scenario, error) {
	i := slices.IndexFunc(presets, func(p preset) bool { return p.name == name })
	if i < 0 {
		return nil, fmt.Errorf("preset %q: want one of %s", name, strings.Join(Presets(), ", "))
	}
	return presets[i].make(), nil
}
