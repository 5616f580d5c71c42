package logx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/huddle-lan/huddle/internal/logs"
)

// TimeFormat is the format of every log line's "time" field: RFC 3339 in
// UTC with exactly nine fractional digits. The lab measures milliseconds
// across nodes, and a fixed width in one time zone makes the merged lines
// of several nodes (on machines in any zone) sort by time as text. Readers
// parse it with time.RFC3339Nano, which accepts any number of digits.
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// ConsoleTimeFormat is the time of a console line: the local clock, to the
// microsecond.
const ConsoleTimeFormat = "15:04:05.000000"

func init() {
	// zerolog keeps its time format and clock in package variables;
	// huddle only ever uses these. time.Now is local: in UTC the offset
	// is always "Z".
	zerolog.TimeFieldFormat = TimeFormat
	zerolog.TimestampFunc = func() time.Time { return clock().UTC() }
}

// clock is the time of the log lines (a test sets another).
var clock = time.Now

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
		w = Console(w, !isTerminal(w))
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), closer, nil
}

// CheckFile says whether New can append the log to the file at path,
// without writing to it: it opens the file as New does, and removes it if
// it made it. The error names only the cause ("no such file or
// directory", "permission denied").
func CheckFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	made := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	f.Close()
	if made {
		os.Remove(path)
	}
	return nil
}

// Console returns a writer turning JSON log lines into lines for people:
//
//	12:04:05.123456 INF view.installed view=2.5 coordinator_incarnation=1795471120180809 members=[5,1,2] ... node=3
//
// the time (ConsoleTimeFormat), the level, the event, the message only when
// it says more than the event's name, then the fields in the order the line
// has them, with node, the same on every line of a node, last.
func Console(out io.Writer, noColor bool) io.Writer {
	return consoleWriter{zerolog.ConsoleWriter{
		Out:           out,
		NoColor:       noColor,
		TimeFormat:    ConsoleTimeFormat,
		PartsOrder:    []string{zerolog.TimestampFieldName, zerolog.LevelFieldName, logs.EventKey, zerolog.MessageFieldName},
		FieldsExclude: []string{logs.EventKey},
		FormatPartValueByName: func(v any, _ string) string {
			if s, ok := v.(string); ok {
				return bold(s, noColor)
			}
			return "" // a line without an event
		},
		FormatPrepare: func(evt map[string]any) error {
			msg, _ := evt[zerolog.MessageFieldName].(string)
			ev, _ := evt[logs.EventKey].(string)
			if ev != "" && saysNoMore(msg, ev) {
				delete(evt, zerolog.MessageFieldName)
			}
			return nil
		},
	}}
}

// consoleWriter is a zerolog.ConsoleWriter that keeps each line's order of
// fields, which zerolog's (a map) loses.
type consoleWriter struct{ zerolog.ConsoleWriter }

func (w consoleWriter) Write(p []byte) (int, error) {
	cw := w.ConsoleWriter // a copy: FieldsOrder is this line's
	cw.FieldsOrder = fieldOrder(p)
	return cw.Write(p)
}

// fieldOrder returns the names of a JSON object's members in their order,
// with node moved last.
func fieldOrder(p []byte) []string {
	d := json.NewDecoder(bytes.NewReader(p))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var names []string
	for d.More() {
		t, err := d.Token()
		var v json.RawMessage
		if err != nil || d.Decode(&v) != nil {
			break
		}
		if k, _ := t.(string); k != logs.NodeKey {
			names = append(names, k)
		}
	}
	return append(names, logs.NodeKey)
}

// saysNoMore reports whether a message only repeats its event's name: each
// of its words is a word of the event's, or an inflection of one ("peer
// seen" for peer.seen, "delivered" for deliver, "sent" for send). Numbers
// do not count: the fields carry them ("view 2.5 installed").
func saysNoMore(msg, event string) bool {
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) })
	}
	evWords := words(event)
	for _, m := range words(msg) {
		if !slices.ContainsFunc(evWords, func(e string) bool { return sameWord(m, e) }) {
			return false
		}
	}
	return true
}

// sameWord reports whether a and b share a stem: all of the shorter one
// but its last letter, and at least three letters.
func sameWord(a, b string) bool {
	n := max(3, min(len(a), len(b))-1)
	return a == b || len(a) >= n && len(b) >= n && a[:n] == b[:n]
}

func bold(s string, noColor bool) string {
	if noColor || os.Getenv("NO_COLOR") != "" {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
