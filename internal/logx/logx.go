package logx

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// TimeFormat is the format of every log line's "time" field: RFC 3339 with
// nanoseconds, so that the lab can measure milliseconds across nodes.
const TimeFormat = time.RFC3339Nano

func init() {
	// zerolog keeps its time format in a package variable; huddle only
	// ever uses this one.
	zerolog.TimeFieldFormat = TimeFormat
}

// Options selects the log's level, format and destination.
type Options struct {
	Level  string // debug, info, warn, error
	Format string // json or console
	File   string // path to append to; "" = stderr
}

// New returns a logger writing as o says, and a Closer for its file (a no-op
// for stderr). stderr is used when o.File is empty.
func New(o Options, stderr io.Writer) (zerolog.Logger, io.Closer, error) {
	lvl, err := zerolog.ParseLevel(o.Level)
	if err != nil || o.Level == "" {
		return zerolog.Nop(), nil, fmt.Errorf("log: level %q is not one of debug, info, warn, error", o.Level)
	}
	var w io.Writer = stderr
	var closer io.Closer = nopCloser{}
	if o.File != "" {
		f, err := os.OpenFile(o.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return zerolog.Nop(), nil, fmt.Errorf("log: %w", err)
		}
		w, closer = f, f
	}
	if o.Format == "console" {
		// Colours only for a terminal: a file or a pipe gets plain text.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !isTerminal(w)}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), closer, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
