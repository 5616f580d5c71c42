package lab

import (
	"fmt"
	"time"
)

// TEMPORARY STUB (not committed): replaced by the burst branch.
type LossModel struct {
	Loss   float64
	Burst  float64
	Delay  time.Duration
	Jitter time.Duration
}

func (m LossModel) Validate() error { return nil }
func (m LossModel) String() string  { return fmt.Sprintf("%v%% loss", m.Loss*100) }
func (l *LAN) SetLossModel(host int, m LossModel) error { return l.SetLoss(host, m.Loss) }
func (l *LAN) SupportsDelay() bool { return false }
