// Package election will hold the leader elections that run as group
// protocols over a membership service: Chang–Roberts ring election (1979)
// and Garcia-Molina's Bully algorithm (1982), each a deterministic state
// machine that counts the messages it sends. See DESIGN.md, section
// "election". It has no code yet.
package election
