// Package ping is huddle ping: it tells whether multicast and unicast get
// through between the machines of a LAN, with loss and round-trip times,
// and names the usual cause when they do not. It is the counterpart of
// omping and of JGroups' McastSenderTest/McastReceiverTest.
//
// A pinger runs on each machine. Every interval it sends a probe to the
// group (ProbeMulticast) and one to each peer it has heard of
// (ProbeUnicast), by multicast or by unicast, and with --peer to
// addresses given before they are heard. A peer answers every probe by
// unicast (EchoMulticast, EchoUnicast), so the sender measures the round
// trip out by multicast and out by unicast apart. The datagram is 24
// bytes and the sender's ID (probe.go); an echo carries the probe's number
// and send time back, and every datagram says how many peers its sender
// hears.
//
// Counting. A probe to a peer waits for its answer. It counts as lost
// once the peer was heard more than a guard (half an interval, at most
// 250ms) after the probe left without answering it: a peer that keeps
// talking but does not answer did not get the probe, or its answer did not
// come back. A probe the peer never had the chance to answer (it was not
// running yet, or had left) is not counted. An answer after the verdict
// turns the loss into a late answer. The peer's own probes are counted by
// the span of their numbers, so gaps are the loss toward here.
//
// Ending. After its count or duration a pinger sends Done to the group and
// to each peer every interval, and answers on until every peer is done or
// silent, at most max(3 intervals, 2s): pingers started a little apart
// still answer each other's last probes.
//
// The diagnosis (Diagnose) takes the four directions, multicast and
// unicast, in and out, and names the cause from what got through:
// nothing after a while (silent), multicast that stopped while unicast went
// on (IGMP snooping without a querier), unicast without multicast (a TTL of
// 1 toward another subnet, IGMP snooping, a switch or firewall dropping
// multicast), one direction only (a firewall, a switch port without the
// group, the wrong interface), and a peer whose address is outside the
// interface's subnets (the wrong interface).
//
// Run opens the sockets and drives a Pinger, which holds the logic without
// the sockets or a clock, for tests.
package ping
