package testutil

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// withSeedFlag sets -seed for the duration of the test.
func withSeedFlag(t *testing.T, f seedFlag) {
	old := *seed
	*seed = f
	t.Cleanup(func() { *seed = old })
}

func TestSeedsDefault(t *testing.T) {
	withSeedFlag(t, seedFlag{})
	t.Setenv(SoakEnv, "")
	base, err := seedBase()
	if err != nil {
		t.Fatal(err)
	}
	if base%1_000_000 != 0 || base < 0 {
		t.Errorf("seed base %d: want a multiple of a million, 0 or more", base)
	}
	if got, want := Seeds(t, 3), []int64{base + 1, base + 2, base + 3}; !slices.Equal(got, want) {
		t.Fatalf("Seeds(3) = %v, want %v", got, want)
	}
}

func TestSeedsFlag(t *testing.T) {
	withSeedFlag(t, seedFlag{})
	if err := seed.Set("0"); err != nil {
		t.Fatal(err)
	}
	if got := Seeds(t, 100); !slices.Equal(got, []int64{0}) {
		t.Fatalf("with -seed 0: Seeds = %v, want [0]", got)
	}
}

func TestSeedsSoak(t *testing.T) {
	withSeedFlag(t, seedFlag{})
	for _, tc := range []struct {
		env  string
		want int
	}{{"1", 50}, {"3", 15}, {"20", 100}} {
		t.Setenv(SoakEnv, tc.env)
		if got := len(Seeds(t, 5)); got != tc.want {
			t.Errorf("%s=%s: %d seeds, want %d", SoakEnv, tc.env, got, tc.want)
		}
	}
}

func TestReplay(t *testing.T) {
	t.Run("sub", func(t *testing.T) {
		got := Replay(t, 42)
		want := "seed 42 (replay: go test -run '^TestReplay$' ./internal/testutil -seed=42)"
		if got != want {
			t.Fatalf("Replay = %q, want %q", got, want)
		}
	})
}

func TestForSeeds(t *testing.T) {
	withSeedFlag(t, seedFlag{})
	t.Setenv(SoakEnv, "")
	var ran []int64
	ForSeeds(t, 4, func(t *testing.T, seed int64) {
		if want := fmt.Sprintf("/seed=%d", seed); !strings.HasSuffix(t.Name(), want) {
			t.Errorf("subtest %q, want suffix %q", t.Name(), want)
		}
		ran = append(ran, seed)
	})
	base, _ := seedBase()
	if !slices.Equal(ran, []int64{base + 1, base + 2, base + 3, base + 4}) {
		t.Fatalf("ran seeds %v, want %d+1..4", ran, base)
	}
}

func TestSeedBaseFlag(t *testing.T) {
	withSeedFlag(t, seedFlag{})
	t.Setenv(SoakEnv, "")
	old := *seedBaseFlag
	t.Cleanup(func() { *seedBaseFlag = old })
	if err := seedBaseFlag.Set("0"); err != nil {
		t.Fatal(err)
	}
	// The base is drawn once per binary: a flag set later no longer
	// changes it, so read it as the draw does.
	if v := seedBaseFlag.v; v != 0 || !seedBaseFlag.set {
		t.Fatalf("-seed-base 0 read as %d (set %v)", v, seedBaseFlag.set)
	}
}
