package testutil

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// SoakEnv is the environment variable that multiplies the number of seeds.
const SoakEnv = "HUDDLE_TEST_SOAK"

// seedFlag is -seed; it records whether it was given at all, because 0 is
// a valid seed.
type seedFlag struct {
	v   int64
	set bool
}

func (f *seedFlag) String() string { return strconv.FormatInt(f.v, 10) }

func (f *seedFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return err
	}
	f.v, f.set = v, true
	return nil
}

var seed = func() *seedFlag {
	f := new(seedFlag)
	flag.Var(f, "seed", "run randomized tests with this seed only (replays a failure)")
	return f
}()

// SeedBaseEnv sets the seed base, as -seed-base does.
const SeedBaseEnv = "HUDDLE_TEST_SEED_BASE"

var seedBaseFlag = func() *seedFlag {
	f := new(seedFlag)
	flag.Var(f, "seed-base", "run randomized tests with the seeds B+1..B+n (default: a random B, drawn once per test binary; 0 runs 1..n)")
	return f
}()

// seedBase is the run's seed base: -seed-base, else $HUDDLE_TEST_SEED_BASE,
// else drawn at random once per test binary, a multiple of a million so
// that a run's seeds read apart from another's. A random base makes every
// run of the tests try new paths; the failing seed is printed, and -seed
// replays it.
var seedBase = sync.OnceValues(func() (int64, error) {
	if seedBaseFlag.set {
		return seedBaseFlag.v, nil
	}
	if s := os.Getenv(SeedBaseEnv); s != "" {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("testutil: %s=%q: want an integer", SeedBaseEnv, s)
		}
		return v, nil
	}
	return rand.Int64N(1_000_000) * 1_000_000, nil
})

// Seeds returns the seeds a randomized test runs: [S] with -seed S,
// otherwise B+1..B+n from the run's seed base B (-seed-base, random by
// default), n times more under HUDDLE_TEST_SOAK.
func Seeds(t testing.TB, n int) []int64 {
	t.Helper()
	if seed.set {
		return []int64{seed.v}
	}
	base, err := seedBase()
	if err != nil {
		t.Fatal(err)
	}
	n *= soakFactor(t)
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = base + int64(i+1)
	}
	t.Logf("seeds %d..%d (seed base %d: -seed-base=%d runs them again, -seed=S one of them)", seeds[0], seeds[n-1], base, base)
	return seeds
}

// FixedSeeds is Seeds without the random base: [S] with -seed S, else
// 1..n, n times more under HUDDLE_TEST_SOAK. It is for the few tests
// that measure a statistical figure against a target (NACKs per loss, a
// drop's share) rather than check a guarantee: their figures are stated
// for these seeds, and a random base would turn their spread over seeds
// into a test that fails at random; the soak still runs more of them.
func FixedSeeds(t testing.TB, n int) []int64 {
	t.Helper()
	if seed.set {
		return []int64{seed.v}
	}
	n *= soakFactor(t)
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds
}

// soakFactor reads HUDDLE_TEST_SOAK: unset 1, "1" 10, K ≥ 2 K.
func soakFactor(t testing.TB) int {
	t.Helper()
	s := os.Getenv(SoakEnv)
	if s == "" {
		return 1
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 {
		t.Fatalf("testutil: %s=%q: want 1 (10× seeds) or a multiplier ≥ 2", SoakEnv, s)
	}
	if k == 1 {
		return 10
	}
	return k
}

// ForSeeds runs f in a subtest per seed from Seeds, logging the replay
// command of a failing seed, and stops at the first failing seed.
func ForSeeds(t *testing.T, n int, f func(t *testing.T, seed int64)) {
	t.Helper()
	for _, s := range Seeds(t, n) {
		ok := t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			OnFailure(t, s)
			f(t, s)
		})
		if !ok {
			return
		}
	}
}

// OnFailure makes t log Replay(t, seed) when it ends failed.
func OnFailure(t testing.TB, seed int64) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(Replay(t, seed))
		}
	})
}

// Replay returns "seed S (replay: go test -run '^TestX$' ./pkg -seed=S)"
// for the top-level test of t, in the package being tested. The flag
// comes after the package: go test takes the arguments after an unknown
// flag for the test binary, package path included.
func Replay(t testing.TB, seed int64) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return fmt.Sprintf("seed %d (replay: go test -run '^%s$' %s -seed=%d)", seed, name, pkgDir(), seed)
}

// pkgDir is the tested package relative to the module root: go test runs
// a test binary in its package's directory.
var pkgDir = sync.OnceValue(func() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
})
