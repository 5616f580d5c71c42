// Package report writes huddle report's page: a self-contained HTML
// report of an experiment's run directory (the nodes' JSON logs, and the
// lab's lab.json and scenario.toml when there) or of a sweep's directory
// (sweep.json and its runs), with its plots inline as SVG and their
// figures as CSV files beside it.
//
// It reads the logs with internal/logcheck (Load, and CheckElection and
// CheckMutex for the election rounds and the lock's holds), computes the
// figures (Figures: throughput at the slowest member, latency from send
// to deliver, NACKs and repairs per loss, failover after a kill, the
// election's and the lock's messages), and draws them with
// gonum.org/v1/plot into SVG. Write does it all; docs/experiments.md
// ("Reading a run: huddle report") says what each figure is.
package report
