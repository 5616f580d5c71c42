// Package mutex will hold Ricart–Agrawala distributed mutual exclusion
// (1981) with Lamport clocks, as a deterministic state machine over a
// membership service, with an optional quorum mode for partitions. See
// DESIGN.md, section "mutex". It has no code yet.
package mutex
