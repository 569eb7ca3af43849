package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// logTimeFormat is RFC 3339 with milliseconds, in both formats.
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// newLogger builds the service's one log stream. The console format is
// coloured only on a terminal (and never with NO_COLOR set), so a file or
// a journal gets plain text.
func newLogger(level, format string, w io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	// zerolog's time format is a package variable; main owns it.
	zerolog.TimeFieldFormat = logTimeFormat
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: logTimeFormat, NoColor: !colourful(w)}
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format %q: use console or json", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// colourful reports whether w is a terminal that wants colour.
func colourful(w io.Writer) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
