package main

import "io"

// Placeholder: the control socket's commands (being written).
func cmdStatus(args []string, stdout, stderr io.Writer) int { return exitUsage }
func cmdSend(args []string, stdout, stderr io.Writer) int   { return exitUsage }
