// Package sdnotify speaks systemd's service notification protocol
// (sd_notify(3)): a service of Type=notify tells the service manager
// when it is ready, what it is doing, that it is alive (the watchdog),
// and that it is stopping, in datagrams to the socket named by
// $NOTIFY_SOCKET. Outside systemd there is no such socket and every call
// does nothing.
package sdnotify

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// The states of the protocol that huddle sends.
const (
	Ready     = "READY=1"
	Stopping  = "STOPPING=1"
	Watchdog  = "WATCHDOG=1"
	StatusKey = "STATUS="
)

// Notifier sends notifications to the service manager.
type Notifier struct {
	addr *net.UnixAddr // nil: not under a service manager
}

// FromEnv returns the notifier of $NOTIFY_SOCKET: a path, or an abstract
// socket written with a leading @. Without it, the notifier does nothing.
func FromEnv() *Notifier {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return &Notifier{}
	}
	if name[0] == '@' {
		name = "\x00" + name[1:]
	}
	return &Notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}}
}

// Enabled reports whether a service manager listens.
func (n *Notifier) Enabled() bool { return n.addr != nil }

// Notify sends the states, one per line, in one datagram.
func (n *Notifier) Notify(states ...string) error {
	if n.addr == nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(strings.Join(states, "\n")))
	return err
}

// Status is the STATUS= state: a line for `systemctl status`.
func Status(s string) string { return StatusKey + strings.ReplaceAll(s, "\n", " ") }

// WatchdogInterval returns how often the service manager expects
// WATCHDOG=1 ($WATCHDOG_USEC), when its watchdog is on for this process
// ($WATCHDOG_PID is unset or this process's); 0 when it is off.
func WatchdogInterval() (time.Duration, error) {
	usec := os.Getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, nil
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" {
		p, err := strconv.Atoi(pid)
		if err != nil {
			return 0, errors.New("sdnotify: WATCHDOG_PID " + strconv.Quote(pid) + " is not a number")
		}
		if p != os.Getpid() {
			return 0, nil
		}
	}
	us, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || us == 0 {
		return 0, errors.New("sdnotify: WATCHDOG_USEC " + strconv.Quote(usec) + " is not a positive number")
	}
	return time.Duration(us) * time.Microsecond, nil
}
