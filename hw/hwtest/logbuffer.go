package hwtest

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer is a log sink that goroutines under test write to while the
// test reads it: a bytes.Buffer behind a mutex. The zero value is ready.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines is what was written, split at line ends (one log record a line).
func (l *LogBuffer) Lines() []string {
	return strings.Split(strings.TrimSpace(l.String()), "\n")
}
