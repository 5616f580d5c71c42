// Package script is the one driver of the protocol machines' tests: a
// network of nodes in virtual time (Net), and on it the data-driven
// scripts of testdata/*.txt (Driver, on github.com/cockroachdb/datadriven,
// in the style of etcd raft's testdata scripts).
//
// Net runs Nodes: a protocol machine, or an adapter around one, that
// takes messages (Receive) and time (Tick at NextDeadline) and hands back
// messages and events (Take). Messages arrive after Net.Delay, in FIFO
// order per sender and receiver; a message to 0 goes to every other
// member of the sender's view (every other node, without a view). Views
// are installed by the test (Install), as the membership layer would;
// what is in flight at a view change or a crash is lost, or with Net.Rng
// delivered or lost at random (msgnet.Net.Settle). Drop rules and
// partitions take messages on their way. The election's and the lock's
// randomized and table tests run on Net directly.
//
// Driver runs a script on a Net: it owns the commands every script has
// (add-nodes, view, crash, tick, stabilize, drop, delay, partition, heal,
// hide, show: see Driver.Do), prints every message as it is sent and every
// event as it happens, and runs the Adapter's invariant check after every
// command. An Adapter says how to make a node, how to print its messages
// and events, and adds the machine's own commands:
//
//	func TestScripts(t *testing.T) {
//		script.Run(t, "testdata", func(d *script.Driver[*node, Event]) script.Adapter[*node, Event] {
//			return &adapter{}
//		})
//	}
//
// `go test -run TestScripts -rewrite` writes what the machines print now
// as the expected output (review the diff before committing it).
package script
