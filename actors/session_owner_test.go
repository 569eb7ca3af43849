package actors

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// The session code has one path per message and one owner per part: no
// TryLock (a second path into the actor's state) and no go statement (a
// goroutine per request) in any of its files.
func TestSessionCodeHasNoTryLockOrGoStatement(t *testing.T) {
	files, err := filepath.Glob("session*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "subscribe.go")
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a go statement (a goroutine per request?) at offset %d", name, n.Pos())
			case *ast.SelectorExpr:
				if n.Sel.Name == "TryLock" {
					t.Errorf("%s: TryLock at offset %d", name, n.Pos())
				}
			}
			return true
		})
	}
	if checked < 3 {
		t.Fatalf("checked %d files (%v); the session code moved?", checked, files)
	}
}

// While a session's message waits for ten device actors, nothing waits for
// their answers but the session's reader, once: the answers come back to
// the session actor as messages, not to a goroutine per request.
func TestNoGoroutineWaitsForASessionsRequests(t *testing.T) {
	const arms = 10
	g := newGate()
	svc := startWith(t, Options{DeviceHook: g.hook})
	var entries []string
	for i := range arms {
		d := addArm(t, svc, simArm(i))
		entries = append(entries, fmt.Sprintf(`{"device_id":%q,"configure":{"damping":{"scalar":3}}}`, d.ID))
	}
	sess, sink := open(t, svc, nil)
	r := startReader(t, sess)

	g.shut.Store(true)
	r.send(`{"arm3":[` + strings.Join(entries, ",") + `]}`)
	for range arms {
		<-g.held // every device actor holds its request
	}
	stacks := goroutineStacks()
	waiters, readers := 0, 0
	for _, s := range stacks {
		if strings.Contains(s, "(*Future).wait") || strings.Contains(s, "(*pendingRequest).wait") {
			waiters++
		}
		if strings.Contains(s, "(*tickPath).askActor") {
			readers++
		}
	}
	g.shut.Store(false)
	close(g.release)
	if waiters != 0 || readers != 1 {
		t.Fatalf("%d goroutines wait on a request's future (want 0) and %d readers wait for the actor (want 1), with %d requests outstanding", waiters, readers, arms)
	}
	if codes := sink.next(t).errorCodes(); len(codes) != 0 {
		t.Fatalf("the configure's frame has errors %v", codes)
	}
}

// goroutineStacks returns the stack of every goroutine.
func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// A session driven from its reader and through its actor at once keeps one
// frame per message, in order: the reader's per-tick messages alternate
// with messages the actor must answer (profile, basis, lease, subscription,
// device configures and workspaces), while other goroutines read the
// session's published state, change the devices over the HTTP edge and run
// a second session on the same devices. Run with -race: the actor's state
// and the reader's are each touched by their owner alone.
func TestReaderAndActorAtOnceKeepFramesInOrder(t *testing.T) {
	svc := startWith(t, Options{StateDir: t.TempDir()})
	arm := addArm(t, svc, simArm(0))
	grip := addArm(t, svc, simArm(1))
	sess, sink := open(t, svc, nil)
	other, otherSink := open(t, svc, nil)
	r := startReader(t, sess)

	const n = 400
	messages := func(i int) string {
		ghost := fmt.Sprintf(`{"device_id":"ghost-%03d","commands":{"keep_alive":{}}}`, i)
		switch i % 8 {
		case 1:
			return fmt.Sprintf(`{"session":{"configure":{"basis":{"permutation":%q}}},"arm3":[%s]}`, []string{"XYZ", "ZXY", "YZX"}[i%3], ghost)
		case 2:
			return fmt.Sprintf(`{"session":{"configure":{"profile":{"name":"p%d"}}},"arm3":[%s]}`, i%3, ghost)
		case 3: // after the profile: picking a profile applies its stored lease
			return fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}},"arm3":[%s]}`, 100+i, ghost)
		case 4:
			return fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%d}}},%s]}`, arm.ID, 1+i%4, ghost)
		case 5:
			return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_transform":{"position":{"x":%d,"y":0,"z":0}}}},%s]}`, arm.ID, i%2, ghost)
		case 6:
			return fmt.Sprintf(`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":%q}]}}},"arm3":[%s]}`, arm.ID, ghost)
		case 7:
			return fmt.Sprintf(`{"session":{"configure":{"subscribe":{"devices":"*"}}},"arm3":[%s]}`, ghost)
		}
		return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.2}}}},%s]}`, arm.ID, ghost)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // readers of the published state
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = sess.Profile()
			_ = sess.Basis()
			_ = svc.SessionRefs()
		}
	}()
	go func() { // the HTTP edge, on the same devices and session
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			scalar := float64(1 + i%3)
			if _, err := svc.SetEntry(grip, sess.ID, protocol.Damping{Scalar: &scalar}); err != nil {
				t.Errorf("set an entry over the HTTP edge: %v", err)
				return
			}
		}
	}()
	go func() { // a second session
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			msg := fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%d}}}]}`, 100+i%50, grip.ID, 1+i%2)
			other.Deliver([]byte(msg), 0)
			<-otherSink.frames
		}
	}()

	for i := range n {
		r.send(messages(i))
	}
	for i := range n {
		f := sink.next(t)
		if want := fmt.Sprintf("ghost-%03d", i); !strings.Contains(f.text, want) {
			close(stop)
			wg.Wait()
			t.Fatalf("frame %d does not answer message %d (no %s in it): %s", i, i, want, f.text)
		}
		if codes := f.errorCodes(); len(codes) != 0 {
			close(stop)
			wg.Wait()
			t.Fatalf("frame %d has errors %v: %s", i, codes, f.text)
		}
	}
	close(stop)
	wg.Wait()
	// The last of each control change is the session's state. The message
	// asking for it is also the sentinel: frames are written in order, so a
	// frame more than the messages would be read here instead of its. Its
	// grip configure goes through the session and device actors, behind
	// whatever they still had of the earlier messages.
	r.send(fmt.Sprintf(`{"session":{"force_render_full_state":{}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":17}}},{"device_id":"sentinel","commands":{"probe_position":{}}}]}`, grip.ID)) // Deliver is the reader's alone
	f := sink.next(t)
	if !strings.Contains(f.text, "sentinel") {
		t.Fatalf("a frame more than the messages (not the sentinel's): %s", f.text)
	}
	view := f.raw["session"].(map[string]any)["config"].(map[string]any)
	last := func(k int) int { return (n-1)/8*8 + k }
	if got, want := view["lease"].(map[string]any)["ms"], float64(100+last(3)); got != want {
		t.Errorf("lease %v, want %v (the last one sent)", got, want)
	}
	if got, want := fmt.Sprint(view["profile"]), fmt.Sprintf("map[name:p%d]", last(2)%3); got != want {
		t.Errorf("profile %v, want %v", got, want)
	}
	if got, want := sess.Profile(), fmt.Sprintf("p%d", last(2)%3); got != want {
		t.Errorf("Profile() %q, want %q", got, want)
	}
}

// A panic ends its session the same way whichever part panicked, the
// per-tick path on the reader (its codec) or the actor (applying a
// message that changes the session):
// the connection closes with 1011, the message gets no frame, the arm the
// session commanded ramps to zero and is free for another session, and
// session-ended reports internal_error. The other session carries on.
func TestPanicInEitherPathEndsTheSession(t *testing.T) {
	panicking := func(*Session) { panic("test hook: session actor") }
	for _, c := range []struct {
		name  string
		codec Codec
		hook  func(*Session) // Options.SessionHook
		msg   string
	}{
		{"reader", panicCodec{trigger: "boom"}, nil, `{"boom":1}`},
		// Only this message goes to the actor: the others change nothing.
		{"actor", nil, panicking, `{"session":{"configure":{"profile":{"name":"boom"}}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := startWith(t, Options{SessionHook: c.hook})
			arm := addArm(t, svc, simArm(0))
			sess, sink := open(t, svc, c.codec)
			observer, obsSink := open(t, svc, nil)
			r := startReader(t, sess)

			r.send(forceMsg(arm.ID, 1.5))
			sink.next(t)
			hwtest.EventuallyNil(t, 5*time.Second, "the observer to see the commanded force", func() error {
				if z := exchange(t, observer, obsSink, `{}`).forceZ(t, arm.ID); z < 0.1 {
					return fmt.Errorf("the observer sees force z=%v, want the commanded force", z)
				}
				return nil
			})

			r.send(c.msg)
			sink.waitClosed(t, 1011)
			hwtest.EventuallyNil(t, 5*time.Second, "the force to end after the panic", func() error {
				if z := exchange(t, observer, obsSink, `{}`).forceZ(t, arm.ID); z != 0 {
					return fmt.Errorf("the observer sees force z=%v after the session panicked, want 0", z)
				}
				return nil
			})
			if codes := exchange(t, observer, obsSink, forceMsg(arm.ID, 0.5)).errorCodes(); len(codes) != 0 {
				t.Fatalf("the observer could not take the released arm: %v", codes)
			}
			data := waitEvent(t, svc, event.NameSessionEnded, fmt.Sprintf(`"session_id":%d`, sess.ID))
			if r := eventData(t, data, "reason"); r != "internal_error" {
				t.Fatalf("session-ended reports reason %v, want internal_error: %s", r, data)
			}
			if r := sess.CloseReason(); r != protocol.CloseInternalError {
				t.Fatalf("session ended with reason %q, want %s", r, protocol.CloseInternalError)
			}
			waitSupervision(t, svc, "session-", "StopDirective")
			hwtest.EventuallyNil(t, 5*time.Second, "the session that panicked to leave the list", func() error {
				for _, s := range svc.Sessions() {
					if s == sess {
						return errors.New("the session that panicked is still listed")
					}
				}
				return nil
			})
			// Neither the message that panicked nor a later one is answered:
			// once the reader has delivered both, any frame they got is in
			// the sink.
			r.send(`{}`)
			r.settled(t)
			sink.noFrame(t, "the ended session answered")
		})
	}
}

// When Close returns, the session's profile changes are on disk: the
// session actor does not write them (no Receive may block on the disk), so
// Close does, rather than leaving them to the write-behind's next interval.
func TestCloseWritesTheProfileDurably(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	sess, sink := open(t, svc, nil)
	f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"lab"},"lease":{"ms":250}}}}`)
	if codes := f.errorCodes(); len(codes) != 0 {
		t.Fatalf("errors %v", codes)
	}
	sess.Close(protocol.CloseClientClosed)

	disk, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ps profileSession
	found, err := disk.Load(profileFolder("lab")+"/session", &ps)
	if err != nil || !found || ps.LeaseMs != 250 || ps.Name != "lab" {
		t.Fatalf("the profile's session document after Close: found %v, %+v (%v); want lab with lease 250", found, ps, err)
	}
}
