// Package logs is the vocabulary of huddle's JSON logs and their one
// reader.
//
// The vocabulary is the name of every event the code logs (NodeStarted,
// ViewInstalled, …, in events.go) and of every field (ViewKey,
// MembersKey, …, in fields.go): the writers (node, multicast,
// cmd/huddle and its control socket) log with these constants and the readers
// look events and fields up by them, so that a name is written in one
// place. docs/logs.md documents them, and docs/docs_test.go checks that
// it has a row for every event constant and no other.
//
// The reader splits a line into its members without decoding it, and
// converts only the fields asked for (Event's accessors): a Scanner
// streams a log's events, reusing its memory, for the logs of long runs
// (huddle check, the lab's follower); Read and ReadFile return them
// all (the lab's tests and the benchmarks); Parse reads one line.
//
// The package depends on nothing of huddle's, so that every package can
// import it.
package logs
