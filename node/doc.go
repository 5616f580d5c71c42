// Package node assembles one huddle node. Core is the node's protocol stack
// as a deterministic state machine over datagrams (decode, filter, step the
// engines, encode); the simulator drives it directly. Run is the runtime
// loop that owns the transport, the wall clock and the timers, drives a
// Core, and turns what it reports into log events.
package node
