// Package cluster carries a hapticd lab across hosts: nodes (--role node)
// own devices and their real-time loops; a gateway (--role gateway) serves
// every node's devices to clients as if they were its own.
//
// # Membership
//
// Two modes (Config.Membership), one data path. Static: protoactor's remote
// with the gateway's list of node addresses. Automanaged: every process is
// a member of protoactor's cluster with the automanaged provider and the
// same static list of health endpoints; each node registers the kind
// node-<id> (NodeKind) and the gateway none, so a device's cluster identity
// is its node's kind plus its UUID, and disthash can place it nowhere but
// on its node. The provider would serve its health endpoint on 0.0.0.0;
// startLink hands it an echo server with a listener already bound to
// Config.Bind instead.
//
// In both modes the gateway sends Subscribe to each node every
// SubscribeEvery (static: --peers; automanaged: every node member the
// topology has shown); a node answers with its Inventory and pushes a
// StateBatch of every device to each gateway heard from within
// GatewayTimeout.
//
// # Rejoin
//
// protoactor keys its connections by address, not by process: a process
// that restarts at the address of the one that left inherits that one's
// end. Endpoint writers still retrying the dead process (five attempts 2 s
// apart), and the topology's EndpointTerminatedEvent for the member that
// left, tear down whatever connection is current for the address when they
// finally fire, the new process's included; each torn-down connection's
// own event then tears down the next. Seen here: a node restarted after 3
// to 10 s never came back, or came back and was dropped again. So each
// process start takes a fresh cluster port (Config.Port 0, the default
// with automanaged membership; the health port, which --peers lists, stays
// fixed): a new process is a new member at a new address, which nothing
// said about the old one can reach, while the node's id, its kind and its
// devices' UUIDs stay what they were. The gateway then subscribes at the
// new address only, and the old proxies leave as the new inventory
// arrives (a new process has fresh registers and leases). The writer
// dials a new gRPC connection for each attempt and closes only the last;
// closeFailedHandshakes closes the others, which would otherwise redial a
// dead member's address for good (remote.go).
//
// # Silence
//
// A node is dropped, its devices leaving with device-disconnected, when
// its messages stop arriving: NodeTimeout of silence (hung, cut off), or
// suspectFor once its connection closed (a killed process) or it left the
// topology (a poll that failed). Silence is counted in probes the gateway
// actor gets in line with the nodes' messages, so a batch that waited in
// the mailbox while the gateway was starved still counts as heard, and a
// probe that came late counts no more than probeCredit: a loaded gateway
// does not blame its nodes for its own stall. The node judges its gateways
// the same way (silenceCredit per push tick).
//
// protoactor blocks a member that left by its member id for good, so a hung
// node that resumes stays out of the topology until it restarts. Its link
// still works: it returns through its inventory like any node, and config
// for its devices goes to its actor by address instead of through the
// grain.
//
// # Several gateways
//
// A node gives each gateway it hears from its own register owner
// (gatewaySession, then the next even numbers), so sessions on two
// gateways never share an arm: the one holding it keeps it until it lets
// go or its lease lapses on the node, and the state pushed to the other
// says the arm is held, so its sessions get device_busy.
//
// A node knows a gateway by its address, and a gateway restarted at a
// fixed cluster port comes back at the old one's, its sessions numbered
// from 1 again. So each gateway process draws a random id and says it in
// its Subscribe (wire.Subscribe.process_id): a node that hears another id
// from an address it knows takes the sender for a new gateway, with an
// owner of its own, and forgets everything it kept under the old process's
// owner (leases, declarations, session bindings), its claims and effects
// on the arms ending at once. Nothing an old session declared then meets a
// new session of the same number, also when its withdrawal was lost. A
// gateway older than the field says 0 every time and keeps its owner, as
// before. Commands, effects and navigation say the process too
// (process_id), and a node drops one whose process is not 0 and not the
// one it serves at the address: an old process's message that arrives
// after the new one's Subscribe is not the new owner's.
//
// A new process at a known address is taken only once the one served
// there has been silent takeoverSilence (a restart), and a process left
// for another is refused for GatewayTimeout after: two live gateways that
// advertise one address (a misconfigured advertised address, NAT) would
// otherwise take the node from each other every subscription round. The
// refused one gets wire.SubscribeRefused instead of the inventory and
// drops the node's devices, and it takes no inventory the node sends its
// address for another process (wire.Inventory.process_id) until one is
// for it. The refusal's code tells a restart from a second live process:
// unavailable while the newcomer only waits out the old process's
// silence (the gateway subscribes again, and says nothing), device_busy
// once the holder subscribed after the newcomer's first knock, or the
// newcomer was left for another. Only the latter (or "pending" refusals
// past pendingRefusalFor) is logged at error level and published as
// lab-node-refused, once, until the node takes the gateway or its
// refusals stop for GatewayTimeout.
//
// # Builds
//
// Every process of a lab runs one build: a process that meets a message
// type it does not know cannot decode it, and one that meets a message it
// knows from another build may take it otherwise than meant (a tour's
// mixed lab served a node's config stale through the gateway without a
// word). So each member states its build (Config.Build, BuildOf: the
// version, the VCS revision where the binary has one, and the wire
// schema's digest), and a member of another build (SameBuild) is refused
// at join, before anything else is exchanged. A node
// refuses a gateway's Subscribe that states another build (or none: a
// gateway older than the field) with wire.SubscribeRefused, code
// version_mismatch, and keeps nothing of it; it pushes nothing to it, so
// an older gateway never meets the node's newer messages. A node older
// than the field states none and cannot refuse anything: it answers a
// newer gateway's Subscribe with its Inventory, which the gateway refuses
// (refuseBuild): none of its devices is listed (those of an earlier
// process of the node leave), its states and events are dropped. Either
// way the gateway logs the refusal at error level and publishes
// lab-node-refused once per refusal, and Ready (/readyz's lab check)
// names the node while it lasts; Started, which the process's start waits
// for, does not wait on it. Nothing needs clearing by hand: the gateway
// subscribes every round as to any node, and the node restarted with the
// gateway's build takes the next Subscribe (or states the gateway's build
// in its next Inventory), which ends the refusal; one whose refusals stop
// (gone) is forgotten after GatewayTimeout. docs/lab.md's upgrade order
// (stop the gateway, upgrade and restart the nodes, then the gateway)
// meets no refusal at all: no two builds run at once.
//
// # Data plane
//
// On the gateway each remote device is an ordinary actors device whose
// driver is a proxy: Exchange reads the latest pushed state and forwards the
// loop's output command one-way to the node, which writes it into the
// device's command register under its own lease (LeaseMs). No tick waits on
// the network, and a lost link or gateway ramps the force to zero on the
// node as a quiet client does. Each command carries the send time of the
// newest batch the gateway had from the node, and its lease ends at most
// LeaseMs after it: a node whose pushes are lost one way stops the force
// within the lease even while the gateway's commands still arrive. Each
// batch carries the node's read time and its estimate of the gateway's
// clock offset; with the gateway's own estimate from the other direction,
// the proxy measures how old each state its loop takes is (GET /stats,
// remote.state_age). Each state also says how old it was at the node's read
// (wire.State.age_ns): the read time less the tick as of which the node's
// loop knows it current (loop.Device.LoadCurrent), not less its publish
// time. A moving simulated arm nobody read lately publishes one tick in
// 128, so the first push to a gateway that just subscribed may carry a
// state up to 127 ms old, and says so; an arm at rest keeps a snapshot
// published long ago that is still current, and is pushed as such. The
// proxy counts a state's age from then, and keeps the later time of a
// state pushed twice (the same tick).
//
// # Config
//
// A node's device-global config is the device's: the gateway keeps a copy,
// copied in when the device joins (Gateway.syncConfig), and sends every
// client's set or reset to the node, which validates and persists it
// first. Each pushed state carries the device's config generation
// (wire.State.config_gen, configGenLocked: a new one whenever the node's
// config of the device differs from when it last looked), so a change made
// on the node itself reaches the copy: a proxy that gets another
// generation than its copy was read at marks the entries unsure (reads ask
// the node) and copies them in again, one sync of a device at a time
// (Gateway.syncConfigSoon).
//
// # Effects
//
// A gateway session's effects on a remote arm are rendered by the node's
// loop, never by the gateway's: the proxy is a loop.RemoteEffects, so the
// gateway's loop keeps the session's Set (its frames, GET .../effects and
// the session's lease bookkeeping work as on a local arm) but hands it to
// the proxy instead of rendering it, and its commands hold the arm with the
// session's own force alone. The proxy sends the declaration (wire.Effects:
// the Set's specs in the device frame, as the session's own conversion made
// them, with their expiries as time left) when it changes and again while
// the node's pushed effects_gen lags, never per tick. The node rebuilds the
// Set with effect.NewSet under the owner of the gateway's commands, so it
// renders under their lease and ramps out with them; a lapsed lease pauses
// it (the gateway's next command renders it again at once), and an idle
// command, an empty declaration, another owner taking the arm or the
// node forgetting the gateway withdraws it. Every command names the
// gateway session it is of (wire.Command.session), and the node renders
// the Set only under commands of the session that declared it: one
// gateway owner carries all its sessions' commands, and a lost withdrawal
// must not give a new session the old one's field. A node that cannot take
// a declaration answers wire.EffectsReply; the gateway withdraws the
// session's effects and publishes effect-refused for it. The node's effects
// report and passivity figures ride back on its state pushes: the gateway's
// frames show the node's proxy points and state.passivity.
//
// Bubble navigation goes the same way (navigation.go): the proxy is a
// loop.RemoteNavigation, so the gateway's loop renders none of it and hands
// the proxy each force command's navigation; the proxy sends the bubble
// (wire.Navigation, with the session's track) when it changes and again
// while the node's pushed navigation_gen lags. The node attaches it to
// that gateway's commands of the same session (their Params), so its loop renders it under
// their owner and lease, and pushes its track's report back; the proxy
// mirrors it into the session's track on the gateway, which its frames,
// state.transform and GET .../config/navigation read. A bubble the node
// cannot take is answered with wire.NavigationReply, and the gateway
// publishes navigation-refused for the session. What the node keeps
// of a gateway's declarations (effects generations, navigations) goes
// when they are withdrawn, when the gateway falls silent, or with the
// device.
//
// One session controls a device across the lab: the node's register
// decides. A node session that holds a device is pushed as held_locally,
// and the proxy then holds the gateway's register for localSession, so the
// gateway's sessions get device_busy as they would on the node.
//
// # Short ids
//
// Haply ids are 16 bits and repeat across a lab. A device keeps its own id
// unless a device already on the gateway holds it; newcomers are taken in
// UUID order, and one whose id is taken, or not spelled as its kind's ids
// are, gets an id derived from its UUID (FNV-1a folded to 16 bits,
// counting up past ids in use). An inventory entry without a UUID, of an
// unknown kind, or repeating a UUID is left out. A device keeps its
// gateway id while it stays connected; the UUID is the identity.
//
// The gateway remembers the ids it gave out, by kind and UUID, in the
// state directory (idsDocument), so a restarted gateway gives each UUID
// its id back whichever node's inventory comes first: a remembered id is
// reserved for its UUID until idReservedFor after the gateway last saw it
// connected, and is never given to another UUID meanwhile (ids.go). The
// document is written off Gateway.mu, by the adds goroutine before a
// device with a new id joins the service, so no client sees an id that a
// crash right after could give away.
//
// # Concurrency
//
// Remote messages arrive on one actor per process; the gateway's maps are
// guarded by one mutex never held across a registry request. Lock order:
// Gateway.idsSaveMu (held across the ids' disk write, taken by saveIDs
// alone), then Gateway.mu, then a proxy's mu or its fxMu, never both (the gateway actor
// hands a batch's states to the proxies under Gateway.mu); a proxy's
// cfgMu is taken last and alone (under Gateway.mu when a push's config
// generation marks entries unsure), never held across a request; a proxy's fxMu
// is also taken alone by ForwardEffects, on whichever goroutine published
// or withdrew the Set, and by the gateway loop's ticks (ForwardNavigation,
// and each command sent); under it the gateway actor mirrors the node's
// navigation reports into the session's track (each mirrored track's one
// writer, since the gateway's loop writes none). Every message a proxy
// sends its node (commands, effects, navigation) is sent under fxMu, so
// the node gets one device's messages in the order the gateway made them;
// declarations are encoded with fxMu released and sent only if still the
// newest, so a tick that ends or starts a session's control never waits
// for an encoding on another goroutine. No Receive
// waits: what must (a node answering a config request, which waits on the
// device actor and a set's fsync; the gateway adding an inventory's
// proxies, which waits on the registry) is queued off the actor: a node's
// config requests to one goroutine per device with requests waiting
// (keyedFIFO), so each device's are answered in the order they came and a
// write hung on one device's document holds no other device's; a
// gateway's adds to one goroutine per process (fifo), so devices are added
// in the order of the inventories that listed them. A proxy is in the gateway's map, its short id taken, from
// the inventory on; it is a device of the gateway's service once its add
// is done. Cluster
// topology events arrive on the provider's poller goroutine and take the
// same mutex. protoactor's known races (disthash swapping its rendezvous
// without a lock, grpclog set by every remote.Start) are why no test runs a
// remote or cluster in its own process: the lab tests run real processes.
package cluster
