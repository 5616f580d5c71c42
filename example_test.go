package huddle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/config"
)

// Two nodes join a group on an in-process network (on a LAN, call
// huddle.Join instead), wait until they share a view, and multicast
// in total order on a service named "chat". Both deliver both messages,
// in one order, each with its number in the view's total order.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	net := huddle.NewNetwork(0)
	var chats []*huddle.Service
	for _, id := range []uint64{1, 2} {
		cfg := config.Local()
		cfg.ID = id
		g, err := net.Join(ctx, cfg, zerolog.Nop())
		if err != nil {
			fmt.Println("join:", err)
			return
		}
		defer g.Leave(ctx)
		chats = append(chats, g.Service("chat"))
	}
	for _, chat := range chats {
		waitForMembers(chat, 2)
	}
	for i, chat := range chats {
		if _, err := chat.Multicast(ctx, []byte(fmt.Sprintf("hello from %d", i+1)), huddle.Total); err != nil {
			fmt.Println("multicast:", err)
			return
		}
	}
	var orders [2][]string
	for i, chat := range chats {
		for len(orders[i]) < 2 {
			ev := <-chat.Events()
			if ev.Kind == huddle.Delivered {
				orders[i] = append(orders[i], fmt.Sprintf("#%d %s", ev.Message.GSeq, ev.Message.Payload))
			}
		}
	}
	fmt.Println("the same order on both:", fmt.Sprint(orders[0]) == fmt.Sprint(orders[1]))
	fmt.Println("messages:", len(orders[0]))
	// Output:
	// the same order on both: true
	// messages: 2
}

// waitForMembers reads a service's events until a view of n members.
func waitForMembers(s *huddle.Service, n int) {
	for ev := range s.Events() {
		if ev.Kind == huddle.ViewChanged && len(ev.View.Members) == n {
			return
		}
	}
}

// A service sends to one member with Send: reliable, and in FIFO order
// with the sender's other messages. Only the addressee delivers it.
func ExampleService_Send() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	net := huddle.NewNetwork(0)
	var groups []*huddle.Group
	for _, id := range []uint64{1, 2} {
		cfg := config.Local()
		cfg.ID = id
		g, err := net.Join(ctx, cfg, zerolog.Nop())
		if err != nil {
			fmt.Println("join:", err)
			return
		}
		defer g.Leave(ctx)
		groups = append(groups, g)
	}
	mail := []*huddle.Service{groups[0].Service("mail"), groups[1].Service("mail")}
	waitForMembers(mail[0], 2)
	waitForMembers(mail[1], 2)
	if _, err := mail[0].Send(ctx, 2, []byte("for node 2 only")); err != nil {
		fmt.Println("send:", err)
		return
	}
	for ev := range mail[1].Events() {
		if ev.Kind == huddle.Delivered {
			fmt.Printf("node 2 got %q from node %d (to %d, %v)\n", ev.Message.Payload, ev.Message.From.ID, ev.Message.To, ev.Message.Order)
			break
		}
	}
	_, err := mail[0].Send(ctx, 9, []byte("nobody"))
	fmt.Println(err)
	// Output:
	// node 2 got "for node 2 only" from node 1 (to 2, fifo)
	// huddle: not a member of the view: node 9
}
