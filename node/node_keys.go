package node

import (
	"context"

	"github.com/huddle-lan/huddle/internal/logs"
	"github.com/huddle-lan/huddle/internal/seal"
)

// SetKeys replaces the running node's group keys, as a key reload does:
// the first seals from now on, every one opens (during a rollover, two).
// It fails for a node started without a key. The change is logged as
// key.reloaded.
func (n *Node) SetKeys(ctx context.Context, keys []seal.Key) error {
	var err error
	if derr := n.Do(ctx, func(c *Core) {
		if err = c.SetKeys(keys); err == nil {
			n.log.Info().Str(logs.EventKey, logs.KeyReloaded).Strs(logs.FingerprintsKey, fingerprints(keys)).
				Msgf("group keys reloaded: sealing with %s", keys[0].Fingerprint())
		}
	}); derr != nil {
		return derr
	}
	return err
}
