// Package logx builds the node's zerolog logger from the log configuration:
// JSON lines (the default, read by the lab and the log checker) or a console
// format for people, to standard error or a file, with nanosecond timestamps
// (RFC 3339) so that logs of several nodes can be merged and measured.
package logx
