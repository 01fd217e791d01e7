package action

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/dynwatch/dynwatch/event"
)

// Log writes each payload as one JSON line. Lines are written whole, one at a
// time, so concurrent deliveries never interleave.
type Log struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// NewLog returns a log action writing to w.
func NewLog(w io.Writer) *Log { return &Log{w: w} }

// OpenLog returns a log action appending to the file at path.
func OpenLog(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	return &Log{w: f, c: f}, nil
}

// Send writes d's payload and a newline.
func (l *Log) Send(_ context.Context, d *event.Delivery) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(logLine(d))
	return err
}

// logLine is d's payload as one JSON line, as a log writes it and a command
// reads it on stdin (so that `cat >> file` keeps payloads apart).
func logLine(d *event.Delivery) []byte {
	line := make([]byte, 0, len(d.JSON)+1)
	return append(append(line, d.JSON...), '\n')
}

// Close closes the file the log writes to, if it opened one.
func (l *Log) Close() error {
	if l.c == nil {
		return nil
	}
	return l.c.Close()
}
