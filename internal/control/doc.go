// Package control is a running node's local control socket, through which
// `huddle status` and `huddle send` (and later `huddle elect` and `huddle
// lock`) talk to it.
//
// The socket is a Unix stream socket with permission 0600 (see Path for
// where it lives). Each connection carries one request and one reply, each
// one line of JSON:
//
//	→ {"cmd":"send","args":{"text":"hello","order":"total"},"timeout_ms":5000}
//	← {"ok":true,"result":{"seq":7,"order":"total"}}
//	← {"ok":false,"error":{"code":"not_in_view","message":"..."}}
//
// A node serves its commands like this:
//
//	srv, err := control.Listen(path, control.Commands(n), log) // refuses a live socket, replaces a stale one
//	go srv.Serve()
//	err = n.Run(ctx)
//	srv.Close() // removes the socket file
//
// and a client calls one:
//
//	res, err := control.Call(ctx, path, 5*time.Second, "status", nil) // res: a node.Status as JSON
//
// A command is one Handler in the map Commands returns. Bad input (a
// malformed or oversized request, an unknown command) gets an error reply;
// requests are bounded in size (MaxRequest) and in number (MaxConns at once).
package control
