package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle"
	"github.com/huddle-lan/huddle/cmd/huddle/internal/sdnotify"
	"github.com/huddle-lan/huddle/internal/logs"
)

// statusEvery is how often the service manager's STATUS line is brought up
// to date while no watchdog asks for more.
const statusEvery = time.Second

// notifyService tells systemd (Type=notify) how the node stands, until ctx
// ends or the node stops: READY=1 once the node is a member of a view,
// a STATUS= line for `systemctl status`, WATCHDOG=1 at half the watchdog's
// interval while the node's loop answers (a stuck loop stops the pings,
// and the manager restarts the service), and STOPPING=1 at the end.
// Outside systemd it returns at once.
func notifyService(ctx context.Context, g *huddle.Group, log zerolog.Logger) {
	sd := sdnotify.FromEnv()
	if !sd.Enabled() {
		return
	}
	warn := func(what string, err error) {
		log.Warn().Str(logs.EventKey, logs.NodeWarning).Str(logs.WhatKey, "systemd").Err(err).Msg(what)
	}
	watchdog, err := sdnotify.WatchdogInterval()
	if err != nil {
		warn("the watchdog's settings are not understood; no watchdog pings", err)
	}
	every := statusEvery
	if watchdog > 0 {
		every = min(every, watchdog/2)
	}
	tick := time.NewTicker(min(every, 100*time.Millisecond)) // soon at first, to say READY=1 soon
	defer tick.Stop()
	ready, failed := false, false
	for {
		select {
		case <-ctx.Done():
			sd.Notify(sdnotify.Stopping, sdnotify.Status("stopping"))
			return
		case <-g.Done():
			sd.Notify(sdnotify.Stopping, sdnotify.Status("stopped"))
			return
		case <-tick.C:
		}
		sctx, cancel := context.WithTimeout(ctx, every)
		st, err := g.Status(sctx)
		cancel()
		if err != nil {
			continue // no answer: no ping
		}
		states := []string{sdnotify.Status(statusLine(st))}
		if watchdog > 0 {
			states = append(states, sdnotify.Watchdog)
		}
		if !ready && st.State == huddle.StateMember {
			ready = true
			states = append(states, sdnotify.Ready)
			tick.Reset(every)
		}
		if err := sd.Notify(states...); err != nil && !failed {
			failed = true // once: the manager may have gone away
			warn("cannot notify the service manager", err)
		}
	}
}

// statusLine is the node's state in a line for `systemctl status`.
func statusLine(st huddle.Status) string {
	switch st.State {
	case huddle.StateJoining:
		return fmt.Sprintf("node %d joining group %s", st.ID, st.Group)
	case huddle.StateChanging:
		return fmt.Sprintf("node %d in view %s of %d members, changing view", st.ID, st.View, len(st.Members))
	}
	return fmt.Sprintf("node %d in view %s of %d members, leader %d, lock %s", st.ID, st.View, len(st.Members), st.Leader, st.Lock)
}
