package huddle_test

import (
	"context"
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
)

// chat is README.md's example of the library, here so that the tests
// compile it as the README prints it (docs/docs_test.go checks that the
// two are the same). It joins a real LAN: no test runs it; Example runs
// the same calls on an in-process network.
func chat(ctx context.Context) error {
	cfg := config.LAN() // ID 0: derived from the interface's address
	g, err := huddle.Join(ctx, cfg, zerolog.New(os.Stderr))
	if err != nil {
		return err
	}
	defer g.Leave(ctx)
	chat := g.Service("chat") // a named channel of the group
	events := chat.Events()   // its views and messages, in delivery order, from now on
	if _, err := chat.Multicast(ctx, []byte("hello"), huddle.Total); err != nil {
		return err
	}
	for ev := range events { // until the node stops
		if ev.Kind == huddle.Delivered {
			fmt.Printf("#%d from %d: %s\n", ev.Message.GSeq, ev.Message.From.ID, ev.Message.Payload)
		}
	}
	return nil
}

var _ = chat
