package logs

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// MaxLine is the longest line a Scanner reads; a longer one fails the
// read.
const MaxLine = 16 << 20

// Scanner reads the events of a JSON log one by one. Lines that are not
// events (a panic's trace, a line cut short by a kill or still being
// written) are skipped and counted; blank lines are ignored.
type Scanner struct {
	sc      *bufio.Scanner
	ev      Event
	members []member
	names   map[string]string // see intern
	line    int               // lines read
	lines   int               // non-blank lines read
	skipped int
	first   int // line number of the first skipped line
}

// NewScanner returns a Scanner reading r.
func NewScanner(r io.Reader) *Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 256<<10), MaxLine)
	return &Scanner{sc: sc, names: map[string]string{}}
}

// Scan advances to the next event, which Event then returns. It returns
// false at the end of the input or on an error, which Err returns.
func (s *Scanner) Scan() bool {
	for s.sc.Scan() {
		s.line++
		b := s.sc.Bytes()
		if skipSpace(b, 0) == len(b) {
			continue
		}
		s.lines++
		ok := s.ev.parse(b, s.members, s.names)
		s.members = s.ev.members
		if !ok {
			s.skipped++
			if s.first == 0 {
				s.first = s.line
			}
			continue
		}
		s.ev.Line = s.line
		return true
	}
	return false
}

// Event returns the event Scan read. It refers to the Scanner's buffer
// and is overwritten by the next Scan: Clone it to keep it.
func (s *Scanner) Event() Event { return s.ev }

// Err returns the error that stopped Scan, nil at the end of the input.
func (s *Scanner) Err() error { return s.sc.Err() }

// Lines returns the number of non-blank lines read so far.
func (s *Scanner) Lines() int { return s.lines }

// Skipped returns the number of non-blank lines so far that were not
// events, and the line number of the first (0 for none).
func (s *Scanner) Skipped() (n, first int) { return s.skipped, s.first }

// Read reads every event of a log. skipped counts the lines that are not
// events (a partly written last line among them).
func Read(r io.Reader) (events []Event, skipped int, err error) {
	s := NewScanner(r)
	for s.Scan() {
		events = append(events, s.Event().Clone())
	}
	skipped, _ = s.Skipped()
	return events, skipped, s.Err()
}

// ReadFile reads every event of the log at path; see Read.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, _, err := Read(f)
	if err != nil {
		return events, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}
