//go:build !linux

package node

import (
	"errors"
	"time"
)

func newPreciseTimer(time.Duration) (loopTimer, error) {
	return nil, errors.ErrUnsupported
}
