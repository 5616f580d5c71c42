// Package logx builds the node's zerolog logger from the log configuration:
// JSON lines (the default, read by the lab and the log checker) or a console
// format for people (time, level, event, then the fields), to standard error
// or a file. JSON times are RFC 3339 in UTC with nine fractional digits, so
// that logs of several nodes can be merged, sorted as text and measured.
package logx
