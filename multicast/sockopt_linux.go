package multicast

// Linux doubles the SO_RCVBUF it reports.
const rcvbufFactor = 2

// setReusePort is not needed on Linux: SO_REUSEADDR already lets every
// socket bound to a multicast port get its own copy.
func setReusePort(int) error { return nil }
