package main

import "io"

// Placeholder: huddle demo (being written).
func cmdDemo(args []string, stdout, stderr io.Writer) int { return exitUsage }
