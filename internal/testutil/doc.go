// Package testutil holds helpers shared by huddle's tests, chiefly for
// seeded randomized tests: which seeds to run, and how to replay one.
//
// Every randomized test takes its seeds from Seeds and says which seed
// failed, with the command that replays it:
//
//	func TestFlushUnderLoss(t *testing.T) {
//		testutil.ForSeeds(t, 200, func(t *testing.T, seed int64) {
//			w := sim.New(sim.Options{Seed: seed, Loss: 0.2})
//			...
//			if err := w.RunFor(5 * time.Second); err != nil {
//				t.Fatal(err)
//			}
//		})
//	}
//
// A failure then logs
//
//	seed 17 (replay: go test -run '^TestFlushUnderLoss$' ./membership -seed=17)
//
// and running that command runs only seed 17. Tests that loop over seeds
// themselves call OnFailure(t, seed) or put Replay(t, seed) in a message.
//
// Knobs:
//
//	-seed=S               run every randomized test with seed S only
//	HUDDLE_TEST_SOAK=1    run 10× the seeds (1..10n)
//	HUDDLE_TEST_SOAK=K    run K× the seeds, for K ≥ 2
//
// The package registers the -seed flag, so a test binary must not define
// its own.
//
// Tests that need real sockets start with
//
//	if !testutil.PrivateNetwork(t) {
//		return
//	}
//
// which re-runs the test in a fresh user and network namespace (unshare
// -rn) holding only a multicast-capable loopback, so that nothing it sends
// can leave the machine; where namespaces cannot be made, it skips and
// says why.
//
// Decoder tests of msgpack arrays start from NotArrays, the payloads every
// such decoder rejects, and build their own with Msgpack.
package testutil
