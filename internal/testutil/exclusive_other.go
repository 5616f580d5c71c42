//go:build !unix

package testutil

// lockExclusive does nothing where flock is not: the packages it orders
// run only on Linux.
func lockExclusive(string) {}
