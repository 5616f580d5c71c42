package lan

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/huddle-lan/huddle/internal/systool"
)

// packageOf names the Debian package of each system command the lab runs.
var packageOf = map[string]string{"ip": "iproute2", "tc": "iproute2", "unshare": "util-linux", "nsenter": "util-linux",
	"iptables-restore": "iptables", "nft": "nftables"}

// ErrUnavailable is wrapped by the errors of Available and New when this
// machine cannot host a virtual LAN.
var ErrUnavailable = errors.New("lab: cannot build a virtual LAN here")

var (
	rootOnce, availOnce sync.Once
	rootErr, availErr   error
)

// Available reports whether New can build a LAN here, either as root with
// `ip netns` or in an unprivileged user namespace. The error wraps
// ErrUnavailable and explains why in one sentence; tests skip with it:
//
//	if err := lab.Available(); err != nil { t.Skip(err) }
func Available() error {
	availOnce.Do(func() {
		if err := osReason(); err != nil {
			availErr = fmt.Errorf("%w: %v", ErrUnavailable, err)
			return
		}
		if rootReason() == nil {
			return
		}
		availErr = rootlessReason()
		if availErr != nil && os.Geteuid() == 0 {
			availErr = fmt.Errorf("%w: %v; %v", ErrUnavailable, rootReason(), availErr)
		} else if availErr != nil {
			availErr = fmt.Errorf("%w: not root, and %v", ErrUnavailable, availErr)
		}
	})
	return availErr
}

// rootReason says why the root mode does not work, or nil when it does: it
// creates and deletes a probe namespace holding a bridge.
func rootReason() error {
	rootOnce.Do(func() { rootErr = probeRoot() })
	return rootErr
}

func probeRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	if !systool.Have("ip") {
		return errors.New("the ip command is not installed (apt install iproute2)")
	}
	r := rootRunner()
	name := fmt.Sprintf("hud%d-0-probe", selfPID)
	if _, err := r.run("", "ip", "netns", "add", name); err != nil {
		return fmt.Errorf("root cannot create network namespaces: %v", err)
	}
	defer r.run("", "ip", "netns", "del", name)
	if _, err := r.run("", "ip", "-n", name, "link", "add", "br0", "type", "bridge"); err != nil {
		return fmt.Errorf("root cannot create bridges in a namespace: %v", err)
	}
	return nil
}

// rootlessReason says why the rootless mode does not work, or nil: it starts
// the helper and creates a namespace inside it.
func rootlessReason() error {
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		if !systool.Have(tool) {
			return fmt.Errorf("the %s command is not installed (apt install %s)", tool, packageOf[tool])
		}
	}
	r, err := rootlessRunner()
	if err != nil {
		return fmt.Errorf("unprivileged user namespaces are unusable (%s); enable them (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces above 0) or run as root", oneLine(err))
	}
	defer r.close()
	if _, err := r.run("", "ip", "netns", "add", "probe"); err != nil {
		return fmt.Errorf("ip netns fails in a user namespace (%s)", oneLine(err))
	}
	if _, err := r.run("", "ip", "-n", "probe", "link", "add", "br0", "type", "bridge"); err != nil {
		return fmt.Errorf("bridges fail in a user namespace (%s)", oneLine(err))
	}
	return nil
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
