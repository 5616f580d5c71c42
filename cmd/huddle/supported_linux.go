package main

// supported reports whether the node (huddle run, huddle demo) runs on
// this system. On Linux it does: the system it is built and tested on.
func supported() bool { return true }
