package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/awake"
	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/v30"
	"github.com/hapticd/hapticd/transport/events"
	"github.com/hapticd/hapticd/transport/rawsock"
)

// Config describes the listeners.
type Config struct {
	Service *actors.Service
	Log     zerolog.Logger
	// Bind is the address every listener binds (default 127.0.0.1).
	Bind string
	// Port serves 3.x HTTP and the 3.x simulation WebSocket; LegacyPort the
	// 3.0 API under /3.0/ and its WebSocket; EventsPort the events socket.
	// 0 picks a free port; a negative value disables the listener.
	Port, LegacyPort, EventsPort int
	AllowOrigins, AllowHosts     []string
	Build                        BuildInfo
	// WriteTimeout bounds each frame write to a simulation client; a
	// client that does not read for that long is closed (write_timeout),
	// within a quarter of it more (the watchdog looks that often). 0
	// means 5 s.
	WriteTimeout time.Duration
	// WrapCodec, if set, wraps the codec of every simulation session (tests
	// use it to make a codec panic).
	WrapCodec func(actors.Codec) actors.Codec
	// RecordDir is where POST /recordings writes MCAP files; empty
	// refuses recordings. RecordAll starts one recording of everything at
	// Start (--record DIR), stopped at Shutdown.
	RecordDir string
	RecordAll bool
	// RecordTapTicks is how many ticks of one device a recording's ring
	// holds before the loop drops states (0: 256, a quarter second at
	// 1 kHz). Tests set a small one.
	RecordTapTicks int
	// MaxConnections bounds the connections each listener has open,
	// WebSockets included (0: DefaultMaxConnections). Past it a new
	// connection is answered 503 with Retry-After and closed, but for a
	// probe of the HTTP listener (isProbe), served, then closed.
	MaxConnections int
	// Ports reads the hardware scan's latest outcome for GET /ports; nil
	// when the service watches no hardware.
	Ports func() HardwarePorts
	// Lab is /readyz's check of a lab's node or gateway: ready once its
	// cluster link is up and, on a gateway, its nodes' devices are listed.
	// nil in standalone (no check). Called from any goroutine.
	Lab func() (ready bool, detail string)
}

func (cfg *Config) wrapCodec(c actors.Codec) actors.Codec {
	if cfg.WrapCodec == nil {
		return c
	}
	return cfg.WrapCodec(c)
}

// Server runs every listener. All listeners go through one accept path
// (listen), so each is guarded, logged and shut down alike.
type Server struct {
	log       zerolog.Logger
	svc       *actors.Service
	guard     *BrowserGuard
	conns     *connSet
	eventsSrv *events.Server
	rec       *recording.Recorder
	mu        sync.Mutex
	servers   []*http.Server
	addrs     map[string]net.Addr
	// maxConns is each listener's connection limit; limits are the
	// listeners that keep it, by name.
	maxConns int
	limits   map[string]*limitListener
	wg       sync.WaitGroup
	// stopWatch ends the connections' write watchdog, once they are gone.
	stopWatch     chan struct{}
	stopWatchOnce sync.Once
}

// Listener names, as logged and as Addr takes them.
const (
	ListenerHTTP   = "http"
	ListenerLegacy = "legacy"
	ListenerEvents = "events"
)

// Start binds every enabled listener and serves. It logs one line per
// listener with its real address; the caller logs "ready" after it.
func Start(cfg Config) (*Server, error) {
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.1"
	}
	if cfg.MaxConnections < 0 {
		return nil, fmt.Errorf("transport: a connection limit of %d: give 1 or more (0: %d)", cfg.MaxConnections, DefaultMaxConnections)
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	s := &Server{
		log:   cfg.Log,
		svc:   cfg.Service,
		conns: newConnSet(cfg.WriteTimeout),
		addrs: make(map[string]net.Addr),
		rec:   newRecorder(cfg),

		maxConns: cfg.MaxConnections,
		limits:   make(map[string]*limitListener),

		stopWatch: make(chan struct{}),
	}
	s.guard = NewBrowserGuard(cfg.Bind, cfg.AllowOrigins, cfg.AllowHosts, func(r *http.Request, code protocol.Code, reason string) {
		cfg.Log.Warn().Str("remote", r.RemoteAddr).Str("origin", r.Header.Get("Origin")).Str("host", r.Host).Str("code", string(code)).Msg("refused a browser request")
	})

	type listenerSpec struct {
		name    string
		port    int
		handler http.Handler
		// probes: it serves /healthz, /readyz and /metrics, at its
		// connection limit too.
		probes bool
	}
	var specs []listenerSpec
	if cfg.Port >= 0 {
		a := &api{svc: cfg.Service, codec: protocol.Codec{}, build: cfg.Build, log: cfg.Log, servesSchema: true, servesOperator: true, rec: s.rec}
		a.ws = newSessionHandler(cfg.Service, cfg.wrapCodec(a.codec), s.conns, cfg.Log.With().Str("api", "3.x").Logger())
		a.ws.rec = s.rec
		router, err := newRouter(a)
		if err != nil {
			return nil, err
		}
		specs = append(specs, listenerSpec{ListenerHTTP, cfg.Port, s.withOperatorRoutes(cfg, enabledListeners(cfg), router), true})
	}
	if cfg.LegacyPort >= 0 {
		a := &api{svc: cfg.Service, codec: v30.Codec{}, prefix: protocol.LegacyRoutePrefix, build: cfg.Build, log: cfg.Log,
			legacyUse: cfg.Service.Activity().NoteLegacyRoute, rec: s.rec}
		a.ws = newSessionHandler(cfg.Service, cfg.wrapCodec(a.codec), s.conns, cfg.Log.With().Str("api", "3.0").Logger())
		a.ws.rec = s.rec
		router, err := newRouter(a)
		if err != nil {
			return nil, err
		}
		// The 3.0 WebSocket upgrades on "/" of its port, the routes live
		// under /3.0/. "/" is a GET (and HEAD) route as on the 3.x port, so
		// another method answers 405 as there: it answered the root
		// document, and a POST upgrade the library's refusal.
		router.Handle(http.MethodGet, "/", a.root)
		router.Handle(http.MethodHead, "/", a.root)
		specs = append(specs, listenerSpec{ListenerLegacy, cfg.LegacyPort, router, false})
	}
	if cfg.EventsPort >= 0 {
		s.eventsSrv = events.NewServer(cfg.Service.Activity(), cfg.Log.With().Str("listener", ListenerEvents).Logger())
		specs = append(specs, listenerSpec{ListenerEvents, cfg.EventsPort, s.eventsSrv, false})
	}
	// Started once nothing before the listeners can fail: every return
	// after this one goes through Shutdown, which stops it.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.conns.expireStalledWrites(s.stopWatch)
	}()
	if !rawsock.ReceiveTimes {
		s.conns.awake = awake.New(awakeInterval, awakeSlack)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.conns.awake.Run(s.stopWatch)
		}()
	}
	for _, sp := range specs {
		if err := s.listen(sp.name, net.JoinHostPort(cfg.Bind, strconv.Itoa(sp.port)), sp.probes, s.guard.Wrap(sp.handler)); err != nil {
			_ = s.Shutdown(context.Background())
			return nil, err
		}
	}
	if cfg.RecordAll {
		info, err := s.rec.Start(recording.Options{Name: "hapticd"})
		if err != nil {
			_ = s.Shutdown(context.Background())
			return nil, err
		}
		s.log.Info().Str("path", info.Path).Msg("recording everything")
	}
	return s, nil
}

// maxHeaderBytes bounds a request's line and headers (docs/operations.md).
// net/http reads 4 KiB past its MaxHeaderBytes before it answers 431
// (initialReadLimitSize, "bufio slop"), so the server is given the bound
// less that.
const maxHeaderBytes = 64 << 10

const netHTTPHeaderSlop = 4 << 10

func (s *Server) listen(name, addr string, probes bool, h http.Handler) error {
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("transport: %s listener on %s: %w (is another hapticd running? pick another port with its flag, or 0 for a free one)", name, addr, err)
	}
	l := newLimitListener(tl, name, s.maxConns, probes)
	srv := &http.Server{
		// The limit comes first: a refusal costs no more than its answer.
		Handler:           l.refuseOverLimit(h),
		ConnContext:       l.connContext,
		ReadHeaderTimeout: 5 * time.Second,
		// A body that trickles in must not hold a handler forever. Upgraded
		// WebSockets are not affected: gorilla clears the deadlines the
		// server set when it takes the connection over.
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: maxHeaderBytes - netHTTPHeaderSlop,
	}
	s.mu.Lock()
	s.servers = append(s.servers, srv)
	s.addrs[name] = l.Addr()
	s.limits[name] = l
	s.mu.Unlock()
	s.log.Info().Str("listener", name).Str("addr", l.Addr().String()).Msg("listening")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Str("listener", name).Msg("listener stopped")
		}
	}()
	return nil
}

// Addr returns a listener's real address (port 0 resolved), or nil.
func (s *Server) Addr(name string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[name]
}

// CloseSockets sends every WebSocket a close frame and refuses new ones.
// http.Server.Shutdown does not see hijacked connections, so this comes
// first. The events sockets are told to go away (what is queued for them
// first, within their WriteTimeout) without a wait: Shutdown waits for
// them, within its context, so that a client that stopped reading cannot
// hold the devices' shutdown behind it.
func (s *Server) CloseSockets() {
	s.CloseSessionSockets()
	if s.eventsSrv != nil {
		s.eventsSrv.Shut(time.Time{})
	}
}

// CloseSessionSockets is CloseSockets without the events sockets: a stop
// closes the sessions first and keeps the events sockets until the
// service's activity channel stops, so that their watchers read the
// sessions' ends (session-ended, reason shutdown) before their close.
func (s *Server) CloseSessionSockets() {
	s.conns.closeAll(protocol.CloseShutdown)
}

// Shutdown stops accepting, closes the sockets and waits for the
// listeners' goroutines. The events sockets' last writes are cut short
// where ctx's deadline needs it: a client that does not take its queue in
// time loses the rest, and the stop is not late for it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.CloseSockets()
	var errs []error
	if s.eventsSrv != nil {
		s.eventsSrv.ShutFor(ctx)
	}
	// Recordings end complete (summary and footer) before the process does,
	// after the service's Shutdown halted the devices (cmd/hapticd's stop):
	// their files end on each device's halted state, at zero force.
	s.rec.StopAll()
	s.mu.Lock()
	servers := append([]*http.Server(nil), s.servers...)
	s.mu.Unlock()
	forced := false
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			if ctx.Err() == nil {
				errs = append(errs, err)
				continue
			}
			// A request still active at the stop's deadline (a client
			// stalled mid-body: net/http waits for it as long as its
			// read timeout): cut it, as a stop must end, rather than
			// fail the stop over one client.
			forced = true
			_ = srv.Close()
		}
	}
	wait := ctx
	if forced {
		s.log.Warn().Msg("stop: cut the connections whose requests had not finished by the stop's deadline")
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(context.Background(), forcedStopGrace)
		defer cancel()
	}
	done := make(chan struct{})
	go func() {
		// The watchdog outlives the connections: one whose write
		// stalls during the shutdown ends only through it.
		s.conns.wg.Wait()
		s.stopWatchOnce.Do(func() { close(s.stopWatch) })
		s.wg.Wait()
		if s.eventsSrv != nil {
			_ = s.eventsSrv.Wait(context.Background())
		}
		close(done)
	}()
	select {
	case <-done:
	case <-wait.Done():
		errs = append(errs, fmt.Errorf("transport: listeners did not stop: %w", wait.Err()))
	}
	return errors.Join(errs...)
}

// forcedStopGrace is how long Shutdown waits for the handlers of the
// connections it cut at the deadline: a closed connection ends their reads
// at once.
const forcedStopGrace = time.Second
