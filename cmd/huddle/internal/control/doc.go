// Package control is a running node's local control socket, through which
// `huddle status`, `huddle send`, `huddle elect`, `huddle lock` and
// `huddle drop` talk to it (docs/control.md describes it for users).
//
// The socket is a Unix stream socket with permission 0600 (see Path for
// where it lives); on Linux the server also refuses peers of another user
// (root excepted). Each connection carries one request and one reply, each
// one line of JSON (a Request and a Reply):
//
//	→ {"cmd":"send","args":{"text":"hello","order":"total"},"timeout_ms":5000}
//	← {"ok":true,"result":{"seq":7,"order":"total"}}
//	← {"ok":false,"error":{"code":"not_in_view","message":"..."}}
//
// "args" may be left out when a command takes none; unknown fields, in the
// request or in args, are errors. "timeout_ms" bounds how long the node
// works on the request: 0 or absent is DefaultTimeout, and MaxTimeout at
// most. The commands (Commands):
//
//	status  no args       → a node.Status: view, members, leader, lock, counters
//	send    SendArgs      → SendResult {"seq","order"}: multicasts "text" (or "payload",
//	                        base64) in "order" fifo (the default), total or safe, on
//	                        "service" ("" is the application's channel); waits while
//	                        the send window is full, and a message that times out is
//	                        not sent
//	elect   no args       → a node.ElectResult {"started","algorithm","leader",
//	                        "leader_round"}: starts an election round and returns at
//	                        once; "started" is false when one is under way or the node
//	                        has no view. The round's leader shows in status
//	lock    LockArgs      → LockResult {"wait_ms","held_ms"}: acquires the group's
//	                        lock, holds it "hold_ms", releases it; a request that
//	                        times out before the grant is withdrawn
//	drop    DropArgs      → DropResult {"drop","before","injected_drops"}: with "rate"
//	                        (0 to 1; 0 is off), replaces the node's built-in drop
//	                        ("from": only these senders; "seed": restart its random
//	                        choices; "burst": drop in bursts of this mean length);
//	                        without it, reports the rule in force
//
// A failure is a reply with an Error: a stable code for programs and a
// message for people. The codes, each with a sentinel for errors.Is:
//
//	bad_request      malformed request or arguments (ErrBadRequest)
//	unknown_command  no such command; the message lists the node's (ErrUnknownCommand)
//	too_large        a request line longer than MaxRequest (ErrTooLarge)
//	busy             MaxConns requests are being handled already (ErrBusy)
//	timeout          the request's timeout passed; the message says why (ErrTimeout)
//	not_in_view      send before the node joined a view (ErrNotInView)
//	stopped          the node is stopping (ErrStopped)
//	failed           anything else, e.g. lock while this node wants or holds it (ErrFailed)
//
// The commands are clients of the Group API of the root package huddle,
// like any program: ForGroup gives them a group's node (group.go), and
// they call its Status, a service's Multicast, Elect, Lock and Unlock, and
// SetDrop. huddle run serves them like this:
//
//	srv, err := control.Listen(path, cmds, log) // refuses a live socket, replaces a stale one
//	g, err := huddle.Start(ctx, cfg, log)
//	maps.Copy(cmds, control.Commands(control.ForGroup(g)))
//	go srv.Serve()
//	<-g.Done()
//	srv.Close() // removes the socket file
//
// and a client calls one:
//
//	res, err := control.Call(ctx, path, 5*time.Second, "status", nil) // res: a node.Status as JSON
//
// Call returns ErrNoNode when nobody listens at the path, and the node's
// failures as *Error. A command is one Handler in the map Commands
// returns; a command that panics fails its request, not the node.
// Requests are bounded in size (MaxRequest) and in number (MaxConns at
// once), and a client that sends nothing is dropped after a few seconds.
package control
