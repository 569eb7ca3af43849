package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// WriteBehind coalesces frequent changes (a WebSocket client may re-send its
// configure every tick) into at most one durable write per document per
// interval: the latest value of each name wins. It flushes on its own
// within interval of the first change of a batch, and on Flush and Close.
//
// Put encodes v when it is called: the snapshot is taken then, so the
// caller may reuse or change v as soon as Put returns. Put never touches
// the disk and never waits for a write in progress.
//
// A background write that fails leaves the document pending (unless a newer
// Put replaced it) and retries at the next interval. The function set with
// OnError is told when a document starts failing, not at each retry (a
// full disk would make that a line per document per second), and the one
// set with OnRecover when it is written at last; until then the next Flush
// returns its latest error too.
//
// With SetWriteTimeout, a write hung on the disk (an fsync that does not
// return) holds neither Flush nor Close past the timeout: they answer
// ErrWriteTimeout naming the documents not on disk, which stay queued and
// are written when the disk answers. OnError hears of them once the
// timeout passes, Flush or not, and Failing counts them; if the disk then
// answers with a real error (a full disk), OnError hears that too.
type WriteBehind struct {
	// Immutable after NewWriteBehind.
	store    *Store
	interval time.Duration
	wake     chan struct{} // cap 1: a batch has started
	stop     chan struct{}
	done     chan struct{}

	// passTurn (cap 1) serialises the passes that write the batches, so
	// that a pass done means every Put made before it started is on disk.
	// Only a pass's own goroutine holds it, across the pass's I/O: no
	// caller waits for it, and Flush waits for its pass with a deadline.
	passTurn chan struct{}

	// mu guards the following. It is never held across disk I/O.
	mu sync.Mutex
	// within bounds Flush and Close (0: no bound); see SetWriteTimeout.
	within time.Duration
	// queued is the pass started but not yet writing, if any: a Flush
	// called now is done when it is, so Flushes during a hung write share
	// one pass rather than queue one goroutine each.
	queued  *pass
	pending map[string]pendingDoc
	// writing is the batch a flush is writing: its documents are neither
	// pending nor all on disk yet, and Pending must still find them.
	writing map[string]pendingDoc
	// failed is reported by the next Flush: the latest failure of each
	// name, so a document retried every interval on a full disk for hours
	// keeps one error, not one per retry. A name leaves it once written:
	// it is then no failure of anything.
	failed map[string]error
	// failing holds the names whose last write failed and that are being
	// retried, with the error OnError heard of each: once, unless a write
	// reported as not taken in time (ErrWriteTimeout) then fails for a
	// real reason, which it hears too. OnRecover hears when one leaves.
	failing   map[string]error
	onError   func(error)
	onRecover func(name string)
	closed    bool
	// landed counts the documents passes have finished with (written or
	// failed): the write timeout counts from the last one, so a slow disk
	// that keeps answering is waited for, as a serial port's write is.
	landed uint64
}

// pass is one write of the batch pending when it starts.
type pass struct {
	done chan struct{} // closed when the pass is over
}

// ErrWriteTimeout is what Flush and Close answer, and OnError hears, when
// the disk has not taken a document within the write timeout
// (SetWriteTimeout). The document stays queued and is written when the
// disk answers.
var ErrWriteTimeout = errors.New("store: the disk did not take the write within the write timeout")

// pendingDoc is an encoded value waiting for its write, with the order
// number it got at Put and the objects it replaces whole (Replacing): a
// value Put over another queued for the same name replaces what that one
// did too, as it holds that change.
type pendingDoc struct {
	data     []byte
	order    uint64
	replaces [][]string
}

// NewWriteBehind starts a write-behind buffer over s that flushes within
// interval (PROTOCOL 4 asks for one second) of a change. Close it on
// shutdown.
func (s *Store) NewWriteBehind(interval time.Duration) *WriteBehind {
	if interval <= 0 {
		interval = time.Second
	}
	w := &WriteBehind{
		store:    s,
		interval: interval,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		passTurn: make(chan struct{}, 1),
		pending:  make(map[string]pendingDoc),
	}
	s.behindMu.Lock()
	s.behind = append(s.behind, w)
	s.behindMu.Unlock()
	go w.run()
	return w
}

// SetWriteTimeout bounds how long Flush and Close wait for the disk, and
// after how long a background write not done is reported as failing
// (OnError, Failing); 0, the default, is no bound. Set it before the
// first Put.
func (w *WriteBehind) SetWriteTimeout(d time.Duration) {
	w.mu.Lock()
	w.within = d
	w.mu.Unlock()
}

// OnError sets the function told about a document that starts failing to
// be written (once, however often it is retried) and about a Put that
// cannot be stored at all (the caller logs them). Set it before the first
// Put; it must not block.
func (w *WriteBehind) OnError(fn func(error)) {
	w.mu.Lock()
	w.onError = fn
	w.mu.Unlock()
}

// OnRecover sets the function told about a document written at last after
// its writes failed (the caller logs that the failure is over). Set it
// before the first Put; it must not block.
func (w *WriteBehind) OnRecover(fn func(name string)) {
	w.mu.Lock()
	w.onRecover = fn
	w.mu.Unlock()
}

// Failing returns how many documents are being retried because their last
// write failed (GET /metrics).
func (w *WriteBehind) Failing() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.failing)
}

// Put records v as the latest value of document name. An invalid name or
// a value that does not encode is refused: reported through OnError and
// the next Flush, and answered, and nothing is stored. After Close, Put is
// refused with ErrClosed and stores nothing: no flush would write it, and
// writing it through would put disk I/O (a hung fsync) in the caller, an
// actor, so the caller answers that the change is not stored.
func (w *WriteBehind) Put(name string, v any) error {
	data, err := encodeDocument(name, v)
	if err != nil {
		w.fail(map[string]error{name: err})
		return err
	}
	doc := pendingDoc{data: data, order: w.store.order.Add(1), replaces: replacedObjects(v)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("store: %s: %w", name, ErrClosed)
	}
	first := len(w.pending) == 0
	if older, ok := w.pending[name]; ok {
		doc.replaces = unionObjects(older.replaces, doc.replaces)
	}
	w.pending[name] = doc
	w.mu.Unlock()
	if first {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// ErrClosed is Put's answer after Close: the value is not stored.
var ErrClosed = errors.New("the write-behind is closed (the service is shutting down): the value is not stored")

// Queued reports whether a value Put for name is queued or being written.
// It takes only the write-behind's own lock, never a store stripe (which a
// write holds across its fsyncs), so an actor may ask; it may also report
// a value a later Save already superseded, so a caller that writes because
// of it writes at most once more than needed.
func (w *WriteBehind) Queued(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, pending := w.pending[name]
	_, writing := w.writing[name]
	return pending || writing
}

// QueuedUnder returns the names under prefix (a document name taken as a
// folder, as List takes it) whose values Put are queued or being written,
// sorted: the documents a removal of the folder must delete as well as
// those List finds, or the flush writes them back after it. It takes only
// the write-behind's own lock, as Queued does.
func (w *WriteBehind) QueuedUnder(prefix string) []string {
	prefix = strings.TrimSuffix(prefix, "/") + "/"
	var names []string
	w.mu.Lock()
	for _, m := range []map[string]pendingDoc{w.pending, w.writing} {
		for name := range m {
			if strings.HasPrefix(name, prefix) && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	w.mu.Unlock()
	slices.Sort(names)
	return names
}

// Pending returns the latest value Put for name that the disk does not
// have yet, encoded; ok is false when the disk has it, or something newer
// (a later Save), or nothing was Put. A reader that must see what was
// acknowledged (the next session of a profile, within the second before
// the flush) decodes this rather than Load the older document on disk.
func (w *WriteBehind) Pending(name string) (data []byte, ok bool) {
	w.mu.Lock()
	doc, ok := w.pending[name]
	if !ok {
		doc, ok = w.writing[name]
	}
	w.mu.Unlock()
	// Not under mu: a stripe and mu are never held together.
	if !ok || w.store.supersededOnDisk(name, doc.order) {
		return nil, false
	}
	return doc.data, true
}

func encodeDocument(name string, v any) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("store: encode %s: %w", name, err)
	}
	return append(data, '\n'), nil
}

// fail records errs (by document name) for the next Flush and tells
// OnError's function.
func (w *WriteBehind) fail(errs map[string]error) {
	w.mu.Lock()
	w.recordFailedLocked(errs)
	fn := w.onError
	w.mu.Unlock()
	if fn != nil {
		fn(joinByName(errs))
	}
}

func (w *WriteBehind) recordFailedLocked(errs map[string]error) {
	if w.failed == nil {
		w.failed = make(map[string]error, len(errs))
	}
	maps.Copy(w.failed, errs)
}

// joinByName joins errs in the order of their names.
func joinByName(errs map[string]error) error {
	list := make([]error, 0, len(errs))
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		list = append(list, errs[name])
	}
	return errors.Join(list...)
}

// Flush writes every pending document now, durably, and returns the
// errors since the last Flush (including failures of background flushes)
// of documents not written since: the latest of each, however often it was
// retried. A document that failed and was written later is not reported.
// Past the write timeout (SetWriteTimeout) it returns ErrWriteTimeout
// naming the documents not on disk, which stay queued.
func (w *WriteBehind) Flush() error {
	p := w.startPass()
	w.mu.Lock()
	within := w.within
	w.mu.Unlock()
	var late error
	if within <= 0 {
		<-p.done
	} else {
		late = w.waitPass(p, within)
	}
	w.mu.Lock()
	failed := w.failed
	w.failed = nil
	w.mu.Unlock()
	if late != nil {
		// late names every document not on disk already.
		maps.DeleteFunc(failed, func(_ string, err error) bool { return errors.Is(err, ErrWriteTimeout) })
	}
	return errors.Join(late, joinByName(failed))
}

// waitPass waits for p until the disk has landed no document for within:
// a disk that keeps answering, however slowly, is waited for; one that
// stopped is not. Past that it returns notWritten.
func (w *WriteBehind) waitPass(p *pass, within time.Duration) error {
	timer := time.NewTimer(within)
	defer timer.Stop()
	last := w.landedCount()
	for {
		select {
		case <-p.done:
			return nil
		case <-timer.C:
			n := w.landedCount()
			if n == last {
				return w.notWritten(within)
			}
			last = n
			timer.Reset(within)
		}
	}
}

func (w *WriteBehind) landedCount() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.landed
}

// notWritten is ErrWriteTimeout naming the documents the disk lacks.
func (w *WriteBehind) notWritten(within time.Duration) error {
	w.mu.Lock()
	names := slices.Collect(maps.Keys(w.pending))
	for name := range w.writing {
		if _, both := w.pending[name]; !both {
			names = append(names, name)
		}
	}
	w.mu.Unlock()
	slices.Sort(names)
	return fmt.Errorf("%w (%v): %d documents not on disk, queued until it answers: %s", ErrWriteTimeout, within, len(names), strings.Join(names, ", "))
}

// startPass returns the pass that writes every Put made before the call:
// the one queued, or a new one on a goroutine of its own.
func (w *WriteBehind) startPass() *pass {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queued != nil {
		return w.queued
	}
	p := &pass{done: make(chan struct{})}
	w.queued = p
	go func() {
		w.passTurn <- struct{}{}
		w.mu.Lock()
		w.queued = nil // a Flush from now on needs a pass of its own
		w.mu.Unlock()
		w.writeBatch()
		<-w.passTurn
		close(p.done)
	}()
	return p
}

// writeBatch writes the current batch; its caller holds passTurn. Failed
// documents go back to pending unless a newer value arrived meanwhile.
func (w *WriteBehind) writeBatch() {
	w.mu.Lock()
	batch := w.pending
	if len(batch) == 0 {
		w.mu.Unlock()
		return
	}
	w.pending = make(map[string]pendingDoc, len(batch))
	w.writing = batch
	within := w.within
	w.mu.Unlock()
	var stalled *time.Timer // reset at each document landed: see landed
	if within > 0 {
		stalled = time.AfterFunc(within, func() { w.reportStalled(within) })
		defer stalled.Stop()
	}

	var errs, started map[string]error
	var recovered []string
	for name, doc := range batch {
		err := w.store.saveBytes(name, doc)
		w.mu.Lock()
		// Leaves writing only now that the disk has it, or pending has it
		// back: Pending never misses a value the disk lacks.
		delete(w.writing, name)
		w.landed++
		if stalled != nil {
			stalled.Reset(within)
		}
		switch {
		case err != nil:
			if errs == nil {
				errs = make(map[string]error)
			}
			errs[name] = err
			if newer, ok := w.pending[name]; !ok {
				w.pending[name] = doc
			} else {
				// Not written: the newer value holds its change, and
				// replaces what it replaced.
				newer.replaces = unionObjects(doc.replaces, newer.replaces)
				w.pending[name] = newer
			}
			if w.newFailureLocked(name, err) {
				w.failing[name] = err
				if started == nil {
					started = make(map[string]error)
				}
				started[name] = err
			}
		case w.failing[name] != nil:
			delete(w.failing, name)
			delete(w.failed, name)
			recovered = append(recovered, name)
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.recordFailedLocked(errs)
	onError, onRecover := w.onError, w.onRecover
	w.mu.Unlock()
	if onError != nil && len(started) > 0 {
		onError(joinByName(started))
	}
	if onRecover != nil {
		slices.Sort(recovered)
		for _, name := range recovered {
			onRecover(name)
		}
	}
}

// newFailureLocked reports whether OnError must hear err for name (and
// makes room to record it): name was not failing, or it was reported only
// as not taken in time and the disk has now answered with a real reason
// (a full disk), which the timeout must not hide.
func (w *WriteBehind) newFailureLocked(name string, err error) bool {
	if w.failing == nil {
		w.failing = make(map[string]error)
	}
	told, was := w.failing[name]
	return !was || errors.Is(told, ErrWriteTimeout) && !errors.Is(err, ErrWriteTimeout)
}

// reportStalled tells OnError, once, of the documents of a pass still not
// on disk past the write timeout, and counts them as failing until they
// are written (OnRecover hears it then): a write hung on the disk is
// otherwise no error at all, and the acknowledged values it holds would
// be lost without a word if the process stopped.
func (w *WriteBehind) reportStalled(within time.Duration) {
	w.mu.Lock()
	errs := make(map[string]error)
	for name := range w.writing {
		err := fmt.Errorf("store: save %s: %w (%v); still waiting for it", name, ErrWriteTimeout, within)
		if !w.newFailureLocked(name, err) {
			continue
		}
		w.failing[name] = err
		errs[name] = err
	}
	w.recordFailedLocked(errs)
	fn := w.onError
	w.mu.Unlock()
	if fn != nil && len(errs) > 0 {
		fn(joinByName(errs))
	}
}

// run flushes one interval after a batch starts. Waiting from the first
// change (not on a fixed ticker) bounds every change's delay by interval
// and costs nothing while idle.
func (w *WriteBehind) run() {
	defer close(w.done)
	timer := time.NewTimer(w.interval)
	timer.Stop()
	for {
		select {
		case <-w.stop:
			timer.Stop()
			return
		case <-w.wake:
			timer.Reset(w.interval)
		}
		select {
		case <-w.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		// Not waited for past stop: a pass hung on the disk must not
		// hold Close.
		select {
		case <-w.stop:
			return
		case <-w.startPass().done:
		}
		w.mu.Lock()
		retry := len(w.pending) > 0
		w.mu.Unlock()
		if retry {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// Close stops the background flusher and flushes everything pending,
// within the write timeout as Flush does. It is idempotent; later Puts
// are refused (ErrClosed).
func (w *WriteBehind) Close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		close(w.stop)
		<-w.done
	}
	return w.Flush()
}

// replacedBefore is what the values of name queued or being written with
// an order number below order replace whole (Replacing).
func (w *WriteBehind) replacedBefore(name string, order uint64) [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [][]string
	for _, m := range []map[string]pendingDoc{w.pending, w.writing} {
		if doc, ok := m[name]; ok && doc.order < order {
			out = unionObjects(out, doc.replaces)
		}
	}
	return out
}
