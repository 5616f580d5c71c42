//go:build !linux

package main

// supported reports whether the node (huddle run, huddle demo) runs on
// this system: not yet. The library packages and this command build here,
// and the node has portable fallbacks for Linux's timerfd and batched
// socket I/O, but it has never been run here: on Windows binding the group
// address fails (and SO_REUSEADDR is not set, so two nodes cannot share a
// port), and elsewhere nothing has checked multicast, the control socket
// or the demo's virtual LAN (Linux network namespaces). The commands that
// only talk to a node (status, send, elect, lock) are left alone.
func supported() bool { return false }
