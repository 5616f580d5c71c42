package multicast

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/huddle-lan/huddle/internal/systool"
	"github.com/huddle-lan/huddle/internal/testutil"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		want  error
	}{
		{syscall.EACCES, ErrPermission},
		{syscall.EPERM, ErrPermission},
		{syscall.ENETUNREACH, ErrNoRoute},
		{syscall.EHOSTUNREACH, ErrNoRoute},
		{syscall.EADDRINUSE, ErrAddrInUse},
		{syscall.ENODEV, ErrNoInterface},
	} {
		// As the net package reports them: an OpError around a SyscallError.
		err := &net.OpError{Op: "write", Net: "udp4", Err: os.NewSyscallError("sendmmsg", tc.errno)}
		got := classify(err)
		if !errors.Is(got, tc.want) || !strings.Contains(got.Error(), tc.errno.Error()) {
			t.Errorf("classify(%v) = %v, want %v naming the cause", err, got, tc.want)
		}
	}
	if err := errors.New("other"); classify(err) != err {
		t.Errorf("classify changed an unrelated error")
	}
}

// TestCheckRouteInterfaceDown shows what checkRoute does detect on Linux: an
// interface that went down after lookupInterface saw it up.
func TestCheckRouteInterfaceDown(t *testing.T) {
	if !testutil.PrivateNetwork(t) {
		return
	}
	group := netip.MustParseAddrPort("239.192.72.68:7468")
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRoute(lo, group); err != nil {
		t.Fatalf("lo up: checkRoute: %v", err)
	}
	if out, err := systool.Command("ip", "link", "set", "lo", "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo down: %v: %s", err, out)
	}
	if err := checkRoute(lo, group); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("lo down: checkRoute = %v, want ErrNoRoute", err)
	}
}
