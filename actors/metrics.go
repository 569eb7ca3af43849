package actors

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hapticd/hapticd/protocol"
)

// traffic counts what the simulation channel carries, per API format, for
// GET /metrics. Sessions add to it on their own goroutines with atomics
// only; the zero value is ready.
type traffic struct {
	formats sync.Map // API format → *formatCounters
}

type formatCounters struct {
	messages, frames atomic.Uint64
	errors, warnings sync.Map // protocol.Code → *atomic.Uint64
}

func (t *traffic) of(format string) *formatCounters {
	if c, ok := t.formats.Load(format); ok {
		return c.(*formatCounters)
	}
	c, _ := t.formats.LoadOrStore(format, new(formatCounters))
	return c.(*formatCounters)
}

// message counts one client message.
func (c *formatCounters) message() { c.messages.Add(1) }

// frame counts one frame and the errors and warnings it carries.
func (c *formatCounters) frame(f *protocol.Frame) {
	c.frames.Add(1)
	for i := range f.Errors {
		addCode(&c.errors, f.Errors[i].Code)
	}
	for i := range f.Warnings {
		addCode(&c.warnings, f.Warnings[i].Code)
	}
}

func addCode(m *sync.Map, code protocol.Code) {
	n, ok := m.Load(code)
	if !ok {
		n, _ = m.LoadOrStore(code, new(atomic.Uint64))
	}
	n.(*atomic.Uint64).Add(1)
}

// FormatTraffic is what the simulation channel carried in one API format
// since the service started.
type FormatTraffic struct {
	Format           string // "3.x" or "3.0"
	Messages, Frames uint64
	// Errors and Warnings count the entries frames carried, by code.
	Errors, Warnings map[protocol.Code]uint64
}

// Traffic reports the simulation channel's counters by API format, sorted
// by format. It reads atomics only.
func (s *Service) Traffic() []FormatTraffic {
	var out []FormatTraffic
	s.traffic.formats.Range(func(k, v any) bool {
		c := v.(*formatCounters)
		out = append(out, FormatTraffic{
			Format:   k.(string),
			Messages: c.messages.Load(),
			Frames:   c.frames.Load(),
			Errors:   codeCounts(&c.errors),
			Warnings: codeCounts(&c.warnings),
		})
		return true
	})
	slices.SortFunc(out, func(a, b FormatTraffic) int { return cmp.Compare(a.Format, b.Format) })
	return out
}

func codeCounts(m *sync.Map) map[protocol.Code]uint64 {
	out := make(map[protocol.Code]uint64)
	m.Range(func(k, v any) bool {
		out[k.(protocol.Code)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// Histogram is a histogram of durations in nanoseconds as GET /metrics
// reads it: bucket by bucket, with atomic loads, never stopping a
// recorder.
type Histogram interface {
	// Buckets calls fn for every non-empty bucket, lowest first, with
	// its bounds (lo inclusive, hi exclusive) and count, and returns the
	// sum of the values recorded.
	Buckets(fn func(loNs, hiNs int64, n uint64)) (sumNs int64)
}

// PeriodHistogram is the device loop's period histogram (for a simulated
// device, its scheduler shard's), or nil before its loop ran.
func (d *Device) PeriodHistogram() Histogram {
	if h := d.rt.PeriodHistogram(); h != nil {
		return h
	}
	return nil
}

// ExchangeHistogram is the driver round trip (for a simulated device, the
// cost of its step; sampled on a scheduler).
func (d *Device) ExchangeHistogram() Histogram {
	if h := d.rt.ExchangeHistogram(); h != nil {
		return h
	}
	return nil
}

// StoreWriteLatency is the histogram of durable writes to the state
// directory, or nil when the service keeps no state directory.
func (s *Service) StoreWriteLatency() Histogram {
	if s.disk == nil {
		return nil
	}
	return s.disk.WriteLatency()
}

// StoreWriteFailures counts the durable writes to the state directory that
// failed (a POST answered 500, each background retry of a profile
// document); ok is false when the service keeps no state directory.
func (s *Service) StoreWriteFailures() (n uint64, ok bool) {
	if s.disk == nil {
		return 0, false
	}
	return s.disk.WriteFailures(), true
}

// StoreDocumentsFailing counts the profile documents written behind whose
// last write failed and that are retried every second.
func (s *Service) StoreDocumentsFailing() int {
	if s.writeBehind == nil {
		return 0
	}
	return s.writeBehind.Failing()
}

// stateFolders are the folders of the state directory the service saves
// documents into, below its top (store.Store.CheckWritable): the devices'
// documents (storeName), the profiles' folder (baseFolders) and each
// profile's (profileFolder: only folders named as store.HashName names
// them; any other folder in profiles.v2/, an operator's backup copy, is
// not the service's, and checked at most once a second). The earlier
// layout's profiles/ is only read and emptied at start (migrateProfiles),
// and recordings (transport's RecordDir) are not documents: a recording
// the folder refuses fails with its own event.
var stateFolders = append(baseFolders[:len(baseFolders):len(baseFolders)], profileFolders)

// baseFolders are the state folders every device's documents need: one
// the service may not write into refuses its start. profileFolders stands
// for each profile's folder: one refused refuses that profile's changes
// only, and is a warning at start.
var baseFolders = []string{"devices", profilesFolder}

const profileFolders = profilesFolder + "/*"

// CheckStateDir reports whether the state directory takes a document now
// (a readiness probe): it writes one block to a temp file and removes it,
// so a full disk fails it as it fails a POST, and checks that the service
// may write into each folder it saves documents into (stateFolders), which
// a run with sudo may have left root's. With no state directory there is
// nothing to check.
func (s *Service) CheckStateDir() error {
	if s.disk == nil {
		return nil
	}
	if err := s.disk.CheckWritable(stateFolders...); err != nil {
		return fmt.Errorf("actors: %w", err)
	}
	return nil
}
